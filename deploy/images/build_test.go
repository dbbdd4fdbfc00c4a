package images_test

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"gotest.tools/v3/assert"

	"github.com/virtkit/virtkit/deploy/images"
)

func archive() *images.FakeArchive {
	return images.NewFakeArchive(map[string]images.FakePackage{
		"libx": {Version: "1.0-1", Depends: []string{"libc"}, Files: map[string]string{
			"usr/":                    "",
			"usr/lib/":                "",
			"usr/lib/libx.so.1":       "libx",
			"usr/share/":              "",
			"usr/share/doc/":          "",
			"usr/share/doc/libx/":     "",
			"usr/share/doc/libx/NEWS": "left out",
		}},
		"libc": {Version: "2:2.36-9", Files: map[string]string{
			"lib64/":                     "",
			"lib64/ld-linux-x86-64.so.2": "->/usr/lib/ld.so",
			"usr/":                       "",
			"usr/lib/":                   "",
			"usr/lib/ld.so":              "loader",
		}},
	})
}

func testImage() images.Image {
	return images.Image{Name: "demo", Binaries: []string{"demo"}, Packages: []string{"libx"},
		User: images.UserNonRoot, Entrypoint: []string{"/usr/bin/demo"}}
}

func binDir(t *testing.T, content string) string {
	dir := t.TempDir()
	assert.NilError(t, os.WriteFile(filepath.Join(dir, "demo"), []byte(content), 0o700))
	return dir
}

func build(t *testing.T, b *images.Builder, img images.Image) v1.Image {
	t.Helper()
	out, err := b.Build(context.Background(), img, t.TempDir())
	assert.NilError(t, err)
	return out
}

func digest(t *testing.T, img v1.Image) string {
	t.Helper()
	d, err := img.Digest()
	assert.NilError(t, err)
	return d.String()
}

// files flattens img into path -> "mode uid:gid content" (or "-> target").
func files(t *testing.T, img v1.Image) map[string]string {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	out := map[string]string{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		assert.NilError(t, err)
		assert.Equal(t, h.ModTime.Unix(), int64(0), h.Name)
		desc := fmt.Sprintf("%04o %d:%d", h.Mode, h.Uid, h.Gid)
		switch h.Typeflag {
		case tar.TypeDir:
			desc = "dir " + desc
		case tar.TypeSymlink:
			desc = "-> " + h.Linkname
		default:
			b, err := io.ReadAll(tr)
			assert.NilError(t, err)
			desc += " " + string(b)
		}
		out[h.Name] = desc
	}
}

func TestBuildLaysOutAccountsPackagesAndBinaries(t *testing.T) {
	b := images.NewBuilder(binDir(t, "#!demo"), archive())
	img := build(t, b, testImage())
	got := files(t, img)

	assert.Equal(t, got["usr/bin/demo"], "0755 0:0 #!demo")
	assert.Equal(t, got["usr/lib/libx.so.1"], "0644 0:0 libx")
	assert.Equal(t, got["lib64/ld-linux-x86-64.so.2"], "-> /usr/lib/ld.so")
	assert.Equal(t, got["tmp"], "dir 1777 0:0")
	assert.Equal(t, got["var/run"], "-> /run")
	assert.Equal(t, got["home/nonroot"], "dir 0750 65532:65532")
	_, doc := got["usr/share/doc/libx/NEWS"]
	assert.Assert(t, !doc, "documentation is left out")
	assert.Assert(t, strings.Contains(got["etc/passwd"], "\nnonroot:x:65532:65532:"), got["etc/passwd"])
	assert.Assert(t, strings.Contains(got["etc/group"], "\nkvm:x:108:\n"), got["etc/group"])

	list := strings.TrimPrefix(got[images.PackageList], "0644 0:0 ")
	lines := strings.Split(strings.TrimSpace(list), "\n")
	assert.Equal(t, len(lines), 2, list)
	assert.Assert(t, strings.HasPrefix(lines[0], "libc 2:2.36-9 all "), list)
	assert.Assert(t, strings.HasPrefix(lines[1], "libx 1.0-1 all "), list)

	cfg, err := img.ConfigFile()
	assert.NilError(t, err)
	assert.DeepEqual(t, cfg.Config, v1.Config{
		User: images.UserNonRoot, Entrypoint: []string{"/usr/bin/demo"},
		Env: []string{"PATH=" + images.Path}, WorkingDir: "/",
		Labels: map[string]string{"org.opencontainers.image.title": "demo"},
	})
	assert.Equal(t, cfg.Created.Unix(), int64(0))
	assert.Equal(t, cfg.OS, "linux")
	layers, err := img.Layers()
	assert.NilError(t, err)
	assert.Equal(t, len(layers), 3, "base, packages, binaries")
}

func TestBuildIsReproducible(t *testing.T) {
	a := archive()
	bins := binDir(t, "#!demo")
	first := digest(t, build(t, images.NewBuilder(bins, a), testImage()))
	assert.Equal(t, digest(t, build(t, images.NewBuilder(bins, a), testImage())), first, "same inputs, same digest")

	// Every input shows in the digest.
	changed := map[string]string{}
	changed["binary"] = digest(t, build(t, images.NewBuilder(binDir(t, "#!other"), a), testImage()))
	changed["epoch"] = digest(t, build(t, images.NewBuilder(bins, a, images.WithEpoch(time.Unix(1577836800, 0))), testImage()))
	root := testImage()
	root.User, root.Why = images.UserRoot, "a test"
	changed["user"] = digest(t, build(t, images.NewBuilder(bins, a), root))
	a.Set("libc", images.FakePackage{Version: "2:2.36-10", Files: map[string]string{"usr/": "", "usr/lib/": "", "usr/lib/ld.so": "loader 2"}})
	changed["package"] = digest(t, build(t, images.NewBuilder(bins, a), testImage()))
	for what, d := range changed {
		assert.Assert(t, d != first, "a different %s gives the same digest", what)
	}
}

func TestBuildRefusesBadImages(t *testing.T) {
	b := images.NewBuilder(binDir(t, "x"), archive())
	for _, tc := range []struct {
		name string
		edit func(*images.Image)
		want string
	}{
		{"no name", func(i *images.Image) { i.Name = "" }, "Image.Name"},
		{"a path as name", func(i *images.Image) { i.Name = "a/b" }, "Image.Name"},
		{"a path as binary", func(i *images.Image) { i.Binaries = []string{"../demo"} }, "Image.Binaries[0]"},
		{"no entry point", func(i *images.Image) { i.Entrypoint = nil }, "Image.Entrypoint"},
		{"unknown user", func(i *images.Image) { i.User = "1000:1000" }, "Image.User"},
		{"root without a reason", func(i *images.Image) { i.User = images.UserRoot }, "Image.Why"},
		{"a missing binary", func(i *images.Image) { i.Binaries = []string{"absent"} }, "absent"},
		{"a missing package", func(i *images.Image) { i.Packages = []string{"nope"} }, `no package "nope"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img := testImage()
			tc.edit(&img)
			_, err := b.Build(context.Background(), img, t.TempDir())
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

func TestTheDaemonsCatalogIsValid(t *testing.T) {
	var names []string
	for _, img := range images.All() {
		assert.NilError(t, img.Validate())
		assert.DeepEqual(t, img.Entrypoint, []string{"/usr/bin/" + img.Binaries[0]})
		names = append(names, img.Name)
	}
	assert.DeepEqual(t, names, []string{"virt-api", "virt-controller", "virt-operator", "virt-handler", "virt-launcher", "virt-importer", "virt-exportserver", "virt-exportproxy", "pause"})
}
