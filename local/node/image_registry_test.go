package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/go-logr/logr/testr"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/local/node/unpack/unpacktest"
	"github.com/virtkit/virtkit/local/registry"
)

// testRegistry serves a registry on a free loopback port until the test
// ends.
func testRegistry(t *testing.T) *registry.Registry {
	t.Helper()
	r, err := registry.Start(context.Background(), registry.Config{Dir: t.TempDir(),
		Addr: fmt.Sprintf("127.0.0.1:%d", testenv.FreePorts(t, 1)), Logger: testr.New(t).WithName("registry")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Stop(context.Background()) })
	return r
}

func pushDisk(t *testing.T, ref, content string) v1.Hash {
	t.Helper()
	disk := filepath.Join(t.TempDir(), "disk.img")
	if err := os.WriteFile(disk, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	d, _, err := registry.PushContainerDisk(context.Background(), ref, disk)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func pushImage(t *testing.T, ref string, img v1.Image) v1.Hash {
	t.Helper()
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img); err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	return d
}

// TestRegistryImageStore: images of the node's registry are pulled,
// unpacked once under their digest and found by tag, digest or another
// loopback name; others are not found.
func TestRegistryImageStore(t *testing.T) {
	reg := testRegistry(t)
	addr := reg.Addr()
	_, port, _ := strings.Cut(addr, ":")
	dir := filepath.Join(t.TempDir(), "images")
	unpacktest.Removable(t, dir)
	s := &RegistryImageStore{Registry: addr, Dir: dir, Logger: testr.New(t)}
	ctx := context.Background()
	d1 := pushDisk(t, addr+"/vm/disk:v1", "disk one")
	want := filepath.Join(dir, "sha256", d1.Hex)

	got, err := s.Mount(ctx, addr+"/vm/disk:v1")
	if err != nil || got != want {
		t.Fatalf("Mount by tag = %q, %v; want %q", got, err, want)
	}
	if b, err := os.ReadFile(filepath.Join(got, "disk", "disk.img")); string(b) != "disk one" {
		t.Errorf("the unpacked disk: %q, %v", b, err)
	}
	// Found again, not unpacked again.
	marker := filepath.Join(got, "marker")
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{
		addr + "/vm/disk:v1",
		"localhost:" + port + "/vm/disk:v1",
		"localhost:" + port + "/vm/disk@" + d1.String(),
	} {
		got, err := s.Mount(ctx, ref)
		if err != nil || got != want {
			t.Errorf("Mount(%s) = %q, %v; want %q", ref, got, err, want)
		}
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("the image was unpacked again: %v", err)
	}

	// A tag pushed again is the new image.
	d2 := pushDisk(t, addr+"/vm/disk:v1", "disk two")
	got, err = s.Mount(ctx, "localhost:"+port+"/vm/disk:v1")
	if want2 := filepath.Join(dir, "sha256", d2.Hex); err != nil || got != want2 {
		t.Errorf("Mount after a new push = %q, %v; want %q", got, err, want2)
	}
	if b, _ := os.ReadFile(filepath.Join(got, "disk", "disk.img")); string(b) != "disk two" {
		t.Errorf("the new disk: %q", b)
	}

	for _, tc := range []struct {
		ref, msg string
	}{
		{addr + "/vm/disk:v9", "is not in the registry " + addr},
		{addr + "/no/such:v1", "is not in the registry " + addr},
		{"example.com/vm/disk:v1", "pulls from its registry " + addr + " only, not from example.com"},
		{"vm/disk:v1", "not from index.docker.io"},
		{"127.0.0.1:1/vm/disk:v1", "not from 127.0.0.1:1"},
		{"Not/A:Reference:at all", "is not an image reference"},
	} {
		_, err := s.Mount(ctx, tc.ref)
		if !errors.Is(err, ErrImageNotFound) || !strings.Contains(err.Error(), tc.msg) || !strings.Contains(err.Error(), fmt.Sprintf("%q", tc.ref)) {
			t.Errorf("Mount(%s) = %v; want ErrImageNotFound naming the reference and saying %q", tc.ref, err, tc.msg)
		}
	}

	// With the registry down, a digest already unpacked is still found; a
	// tag is not resolved, and that is not a missing image (the node
	// retries).
	if err := reg.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Mount(ctx, addr+"/vm/disk@"+d1.String()); err != nil || got != want {
		t.Errorf("Mount by digest, registry down = %q, %v; want %q", got, err, want)
	}
	if _, err := s.Mount(ctx, addr+"/vm/disk:v1"); err == nil || errors.Is(err, ErrImageNotFound) || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("Mount by tag, registry down = %v; want an error other than ErrImageNotFound", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, tmpPrefix+"*")); len(left) != 0 {
		t.Errorf("unpack folders left: %v", left)
	}
}

// TestRegistryImageStoreIndex: of a multi-platform image, the node takes
// linux on its architecture, kept under that image's digest.
func TestRegistryImageStoreIndex(t *testing.T) {
	reg := testRegistry(t)
	mine := unpacktest.Image(t, []unpacktest.Entry{unpacktest.File("arch", 0o644, 0, runtime.GOARCH)})
	other := unpacktest.Image(t, []unpacktest.Entry{unpacktest.File("arch", 0o644, 0, "s390x")})
	idx := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: other, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "s390x"}}},
		mutate.IndexAddendum{Add: mine, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: runtime.GOARCH}}})
	r, _ := name.ParseReference(reg.Addr()+"/multi:v1", name.Insecure)
	if err := remote.WriteIndex(r, idx); err != nil {
		t.Fatal(err)
	}
	s := &RegistryImageStore{Registry: reg.Addr(), Dir: t.TempDir()}
	got, err := s.Mount(context.Background(), reg.Addr()+"/multi:v1")
	if err != nil {
		t.Fatal(err)
	}
	d, _ := mine.Digest()
	if want := filepath.Join(s.Dir, "sha256", d.Hex); got != want {
		t.Errorf("Mount = %q, want %q", got, want)
	}
	if b, _ := os.ReadFile(filepath.Join(got, "arch")); string(b) != runtime.GOARCH {
		t.Errorf("unpacked the image for %q", b)
	}
}

// TestRegistryImageStoreRefusesEscape: an image whose entry leaves its
// root fails the pull (not as a missing image) and leaves no folder.
func TestRegistryImageStoreRefusesEscape(t *testing.T) {
	reg := testRegistry(t)
	d := pushImage(t, reg.Addr()+"/evil:v1", unpacktest.Image(t, []unpacktest.Entry{unpacktest.File("ok", 0o644, 0, "x")}, []unpacktest.Entry{unpacktest.File("../../x", 0o644, 0, "out")}))
	s := &RegistryImageStore{Registry: reg.Addr(), Dir: filepath.Join(t.TempDir(), "images")}
	_, err := s.Mount(context.Background(), reg.Addr()+"/evil:v1")
	if err == nil || errors.Is(err, ErrImageNotFound) || !strings.Contains(err.Error(), "leaves the image's root") {
		t.Fatalf("Mount = %v; want a refusal", err)
	}
	if _, err := os.Stat(filepath.Join(s.Dir, "sha256", d.Hex)); err == nil {
		t.Error("the refused image has a folder")
	}
	entries, _ := os.ReadDir(s.Dir)
	for _, e := range entries {
		if e.Name() != "sha256" {
			t.Errorf("left in the image folder: %s", e.Name())
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(s.Dir), "x")); err == nil {
		t.Error("the entry was written outside")
	}
}

func TestSameRegistry(t *testing.T) {
	for _, tc := range []struct {
		host, addr string
		want       bool
	}{
		{"127.0.0.1:5000", "127.0.0.1:5000", true},
		{"localhost:5000", "127.0.0.1:5000", true},
		{"[::1]:5000", "127.0.0.1:5000", true},
		{"LocalHost:5000", "localhost:5000", true},
		{"127.0.0.2:5000", "127.0.0.1:5000", true},
		{"localhost:5001", "127.0.0.1:5000", false},
		{"localhost", "127.0.0.1:5000", false},
		{"index.docker.io", "127.0.0.1:5000", false},
		{"registry.local:5000", "127.0.0.1:5000", false},
		{"registry.local:5000", "registry.local:5000", true},
		{"10.0.0.1:5000", "127.0.0.1:5000", false},
	} {
		if got := sameRegistry(tc.host, tc.addr); got != tc.want {
			t.Errorf("sameRegistry(%q, %q) = %v, want %v", tc.host, tc.addr, got, tc.want)
		}
	}
}

func TestConfigImageDefaults(t *testing.T) {
	cfg, err := Config{Name: "n", StateDir: "/var/lib/n"}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Registry != registry.DefaultAddr || cfg.ImageDir != "/var/lib/n/images" {
		t.Errorf("Registry %q, ImageDir %q; want %q, /var/lib/n/images", cfg.Registry, cfg.ImageDir, registry.DefaultAddr)
	}
	if _, err := (Config{Name: "n", StateDir: "/s", Registry: "localhost"}).withDefaults(); err == nil || !strings.Contains(err.Error(), "Config.Registry") {
		t.Errorf("a registry without port: %v, want an error naming Config.Registry", err)
	}
}
