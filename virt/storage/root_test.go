package storage_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/virtkit/virtkit/virt/storage"
)

// WithRoot moves the effects below a root (the pod's file system seen from
// the node) while the plan keeps the paths QEMU sees in the pod, and an
// overlay names its base by its pod path.
func TestWithRoot(t *testing.T) {
	ctx := context.Background()
	podFS := t.TempDir() // what /proc/PID/root would show
	l := storage.Layout{
		EphemeralDir:      "/pod/ephemeral",
		PrivateDir:        "/pod/private",
		ContainerDisksDir: "/pod/container-disks",
	}
	writeFile(t, filepath.Join(podFS, "pod/container-disks/disk_2.img"), make([]byte, 4<<20))
	mkdir(t, filepath.Join(podFS, "pod/private/vmi-disks/eph"))
	writeFile(t, filepath.Join(podFS, "pod/private/vmi-disks/eph/disk.img"), make([]byte, 8<<20))
	mkdir(t, filepath.Join(podFS, "pod/private/vmi-disks/data"))
	projected(t, filepath.Join(podFS, "pod/private/config-map/cm"), map[string]string{"ks.cfg": "text\n"})
	vmi := allVolumesVMI()
	pod := storage.Pod{Volumes: map[string]storage.VolumeFacts{"data": {CapacityBytes: 64 << 20}}}

	m := storage.New(storage.WithLayout(l), storage.WithRoot(podFS))
	plan, err := m.Plan(ctx, vmi, pod)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := plan["root"].Path, "/pod/ephemeral/disk-data/root/disk.qcow2"; got != want {
		t.Errorf("overlay path in the plan: %s, want the pod's %s", got, want)
	}
	if got, want := plan["root"].BackingPath, "/pod/container-disks/disk_2.img"; got != want {
		t.Errorf("overlay base in the plan: %s, want the pod's %s", got, want)
	}
	if err := m.Prepare(ctx, vmi, pod, plan); err != nil {
		t.Fatal(err)
	}
	for name, p := range plan {
		info, err := storage.OSInspector{}.Inspect(ctx, filepath.Join(podFS, p.Path))
		if err != nil {
			t.Fatalf("%s: not below the root: %v", name, err)
		}
		if info.BackingFile != p.BackingPath {
			t.Errorf("%s: the image names base %q, want the pod path %q", name, info.BackingFile, p.BackingPath)
		}
	}
	if _, err := os.Stat("/pod"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("something was made outside the root: /pod: %v", err)
	}
	if got := isoFiles(t, filepath.Join(podFS, plan["cm"].Path), "appcfg"); !cmp.Equal(got, map[string]string{"ks.cfg": "text\n"}) {
		t.Errorf("config map ISO read from the root: %v", got)
	}

	// The hotplug inspector sees the same files.
	in := storage.RootInspector(podFS, storage.OSInspector{})
	if ok, err := in.Exists(ctx, plan["root"].Path); !ok || err != nil {
		t.Errorf("RootInspector.Exists(%s) = %v, %v", plan["root"].Path, ok, err)
	}

	if err := m.Release(ctx, plan); err != nil {
		t.Fatal(err)
	}
	for name, p := range plan {
		_, err := os.Stat(filepath.Join(podFS, p.Path))
		if p.Discardable() != errors.Is(err, fs.ErrNotExist) {
			t.Errorf("after Release, %s (%s): %v", name, p.Path, err)
		}
	}
}

// InRoot follows links as the pod sees them and never leaves the root.
func TestInRoot(t *testing.T) {
	root := t.TempDir()
	mkdir(t, filepath.Join(root, "run/kubevirt/disks"))
	mkdir(t, filepath.Join(root, "var"))
	mkdir(t, filepath.Join(root, "data"))
	for link, target := range map[string]string{
		"var/run":    "/run",               // absolute: from the pod's root
		"data/up":    "../run/kubevirt",    // relative
		"data/evil":  "../../../../../etc", // .. stops at the root
		"data/loop1": "loop2", "data/loop2": "loop1",
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		path, want, wantErr string
	}{
		{path: "/var/run/kubevirt/disks", want: "run/kubevirt/disks"},
		{path: "/var/run/kubevirt/missing/new.img", want: "run/kubevirt/missing/new.img"},
		{path: "/data/up/disks", want: "run/kubevirt/disks"},
		{path: "/data/evil/passwd", want: "etc/passwd"},
		{path: "/missing/../../../x", want: "x"},
		{path: "/data/loop1/x", wantErr: "too many levels of symbolic links"},
	}
	for _, tc := range tests {
		got, err := storage.InRoot(root, tc.path)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("InRoot(%s) = %q, %v; want error %q", tc.path, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != filepath.Join(root, tc.want) {
			t.Errorf("InRoot(%s) = %q, %v; want %q", tc.path, got, err, filepath.Join(root, tc.want))
		}
	}
}
