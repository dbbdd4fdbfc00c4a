package registry_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"

	"github.com/virtkit/virtkit/local/registry"
)

// diskFile writes a disk image of n random bytes named base.
func diskFile(t *testing.T, base string, n int) (string, []byte) {
	t.Helper()
	b := make([]byte, n)
	_, _ = rand.Read(b)
	path := filepath.Join(t.TempDir(), base)
	must(t, os.WriteFile(path, b, 0o644))
	return path, b
}

type entry struct {
	Name     string
	Type     byte
	Mode     int64
	Uid, Gid int
	Content  string
}

// TestContainerDisk: the image is laid out as KubeVirt's containerDisks
// are, and the same file always makes the same digest.
func TestContainerDisk(t *testing.T) {
	disk, content := diskFile(t, "disk.qcow2", 3<<20+5)
	img, err := registry.ContainerDisk(disk)
	must(t, err)
	// (validate.Image runs on the pushed image in TestPushContainerDisk:
	// in memory, the tarball layer's empty annotations trip its manifest
	// comparison.)

	layers, err := img.Layers()
	must(t, err)
	if len(layers) != 1 {
		t.Fatalf("%d layers, want 1", len(layers))
	}
	if mt, _ := layers[0].MediaType(); mt != types.OCILayer {
		t.Errorf("layer media type %s, want %s", mt, types.OCILayer)
	}
	rc, err := layers[0].Uncompressed()
	must(t, err)
	defer rc.Close()
	var got []entry
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		must(t, err)
		b, err := io.ReadAll(tr)
		must(t, err)
		got = append(got, entry{h.Name, h.Typeflag, h.Mode, h.Uid, h.Gid, string(b)})
	}
	want := []entry{
		{"disk/", tar.TypeDir, 0o555, 107, 107, ""},
		{"disk/disk.qcow2", tar.TypeReg, 0o440, 107, 107, string(content)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("layer (-want +got):\n%s", diff)
	}
	cfg, err := img.ConfigFile()
	must(t, err)
	if cfg.OS != "linux" || cfg.Architecture != runtime.GOARCH {
		t.Errorf("platform %s/%s, want linux/%s", cfg.OS, cfg.Architecture, runtime.GOARCH)
	}
	if mt, _ := img.MediaType(); mt != types.OCIManifestSchema1 {
		t.Errorf("manifest media type %s", mt)
	}

	again, err := registry.ContainerDisk(disk)
	must(t, err)
	d1, _ := img.Digest()
	d2, _ := again.Digest()
	if d1 != d2 {
		t.Errorf("the same disk made digests %s and %s", d1, d2)
	}
	content[0] ^= 0xff
	must(t, os.WriteFile(disk, content, 0o644))
	changed, err := registry.ContainerDisk(disk)
	must(t, err)
	if d3, _ := changed.Digest(); d3 == d1 {
		t.Errorf("another disk made the same digest %s", d3)
	}

	for name, path := range map[string]string{"missing": filepath.Join(t.TempDir(), "nope.qcow2"), "folder": t.TempDir()} {
		if _, err := registry.ContainerDisk(path); err == nil {
			t.Errorf("ContainerDisk of a %s: no error", name)
		}
	}
}

// TestPushContainerDisk: a push sends the image once; pushing the same
// disk again sends nothing, a changed disk moves the tag.
func TestPushContainerDisk(t *testing.T) {
	r := start(t, t.TempDir(), "")
	ctx := context.Background()
	target := r.Addr() + "/virtkit/test-guest:latest"
	disk, content := diskFile(t, "disk.img", 1<<20)

	d1, pushed, err := registry.PushContainerDisk(ctx, target, disk)
	must(t, err)
	if !pushed {
		t.Errorf("first push: pushed = false")
	}
	d2, pushed, err := registry.PushContainerDisk(ctx, target, disk)
	must(t, err)
	if pushed || d2 != d1 {
		t.Errorf("second push of the same disk: pushed %v, digest %s (first %s)", pushed, d2, d1)
	}
	pulled, err := remote.Image(ref(t, target))
	must(t, err)
	must(t, validate.Image(pulled))
	if d, _ := pulled.Digest(); d != d1 {
		t.Errorf("pulled digest %s, pushed %s", d, d1)
	}

	content[len(content)-1] ^= 1
	must(t, os.WriteFile(disk, content, 0o644))
	d3, pushed, err := registry.PushContainerDisk(ctx, target, disk)
	must(t, err)
	if !pushed || d3 == d1 {
		t.Errorf("push of a changed disk: pushed %v, digest %s (before %s)", pushed, d3, d1)
	}
	if desc, err := remote.Head(ref(t, target)); err != nil || desc.Digest != d3 {
		t.Errorf("the tag after the second push: %v %v, want %s", desc, err, d3)
	}

	if _, _, err := registry.PushContainerDisk(ctx, "Not A Reference", disk); err == nil || !strings.Contains(err.Error(), "registry: push") {
		t.Errorf("push to a bad reference: %v", err)
	}
}

func TestContainerDiskLayerStreams(t *testing.T) {
	// The layer is written from the file each time it is read: reading it
	// twice gives the same bytes.
	disk, _ := diskFile(t, "d.raw", 4096)
	img, err := registry.ContainerDisk(disk)
	must(t, err)
	layers, _ := img.Layers()
	read := func() []byte {
		rc, err := layers[0].Compressed()
		must(t, err)
		defer rc.Close()
		b, err := io.ReadAll(rc)
		must(t, err)
		return b
	}
	if !bytes.Equal(read(), read()) {
		t.Error("two reads of the layer differ")
	}
}
