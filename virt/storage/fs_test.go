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
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/confined"
	"github.com/virtkit/virtkit/virt/storage"
)

// WithFS moves the effects below a root (the pod's file system seen from
// the node) while the plan keeps the paths QEMU sees in the pod, and an
// overlay names its base by its pod path.
func TestWithFS(t *testing.T) {
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

	root, err := confined.Open(podFS, confined.InRoot)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	m := storage.New(storage.WithLayout(l), storage.WithFS(root))
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
	in := storage.FSInspector{FS: root}
	if ok, err := in.Exists(ctx, plan["root"].Path); !ok || err != nil {
		t.Errorf("FSInspector.Exists(%s) = %v, %v", plan["root"].Path, ok, err)
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

// A pod's links are followed as the pod sees them and never out of it: a
// claim folder linked to a node folder gets its disk.img inside the pod,
// and a secret's file linked to a node file is not read.
func TestWithFSStaysInThePod(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	podFS, node := filepath.Join(base, "pod"), filepath.Join(base, "node")
	mkdir(t, filepath.Join(podFS, "run/private"))
	mkdir(t, filepath.Join(podFS, "var"))
	mkdir(t, filepath.Join(node, "etc"))
	writeFile(t, filepath.Join(node, "etc/shadow"), []byte("root:secret\n"))
	for link, target := range map[string]string{
		"var/run":                "/run",                 // absolute: from the pod's root
		"run/private/vmi-disks":  node + "/etc",          // a node path, read in the pod
		"run/private/config-map": "../../../../node/etc", // .. stops at the pod's root
	} {
		if err := os.Symlink(target, filepath.Join(podFS, link)); err != nil {
			t.Fatal(err)
		}
	}
	l := storage.Layout{PrivateDir: "/var/run/private", EphemeralDir: "/var/run/ephemeral"}
	root, err := confined.Open(podFS, confined.InRoot)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	m := storage.New(storage.WithLayout(l), storage.WithFS(root))

	vmi := vmiWith(vol("data", pvc("data")))
	mkdir(t, filepath.Join(podFS, node, "etc/data")) // where the link leads, inside the pod
	pod := storage.Pod{Volumes: map[string]storage.VolumeFacts{"data": {CapacityBytes: 64 << 20}}}
	plan, err := m.Plan(ctx, vmi, pod)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Prepare(ctx, vmi, pod, plan); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(podFS, node, "etc/data/disk.img")); err != nil {
		t.Errorf("disk.img not made inside the pod: %v", err)
	}
	if ents, _ := os.ReadDir(filepath.Join(node, "etc")); len(ents) != 1 {
		t.Errorf("the node's folder was written: %v", ents)
	}

	// A configMap volume whose folder is a link climbing out of the pod
	// finds nothing there: the node's files are never read into an ISO.
	cm := vmiWith(vol("cm", virtv1.VolumeSource{ConfigMap: &virtv1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}))
	if plan, err := m.Plan(ctx, cm, storage.Pod{}); err == nil {
		t.Fatalf("a config volume linked out of the pod was planned: %+v", plan)
	}
	b, err := os.ReadFile(filepath.Join(node, "etc/shadow"))
	if err != nil || string(b) != "root:secret\n" {
		t.Errorf("the node's file changed: %q, %v", b, err)
	}
}

// TestHostDiskStaysInItsFolder plays a hostDisk as a pod user could arrange
// it: the launcher pod mounts the folder of the path at the volume's claim
// folder, and the image there is a link to a node file. It is refused, and
// the node file is neither read nor written. An image that is a file of
// the folder is used; one of type DiskOrCreate is made there, never at the
// path named in the spec.
func TestHostDiskStaysInItsFolder(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	podFS, node := filepath.Join(base, "pod"), filepath.Join(base, "node")
	l := storage.Layout{PrivateDir: "/var/run/private", EphemeralDir: "/var/run/ephemeral"}
	mounted := filepath.Join(podFS, l.PrivateDir, "vmi-disks", "host") // the hostPath volume
	mkdir(t, mounted)
	mkdir(t, filepath.Join(node, "etc"))
	writeFile(t, filepath.Join(node, "etc/shadow"), []byte("root:secret\n"))
	root, err := confined.Open(podFS, confined.InRoot)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	m := storage.New(storage.WithLayout(l), storage.WithFS(root))
	hostDisk := func(path string, typ virtv1.HostDiskType) *virtv1.VirtualMachineInstance {
		return vmiWith(vol("host", virtv1.VolumeSource{HostDisk: &virtv1.HostDisk{Path: path, Type: typ, Capacity: resource.MustParse("16Mi")}}))
	}

	for _, target := range []string{filepath.Join(node, "etc/shadow"), "../../../../../../node/etc/shadow", "/etc/shadow"} {
		link := filepath.Join(mounted, "disk.img")
		_ = os.Remove(link)
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		for _, typ := range []virtv1.HostDiskType{virtv1.HostDiskExists, virtv1.HostDiskExistsOrCreate} {
			vmi := hostDisk("/var/lib/vm-disks/disk.img", typ)
			plan, err := m.Plan(ctx, vmi, storage.Pod{})
			if !errors.Is(err, storage.ErrInvalid) || !strings.Contains(err.Error(), "a symbolic link") {
				t.Fatalf("a hostDisk image linked to %s (%s): plan %+v, %v; want refused as a link", target, typ, plan, err)
			}
		}
	}
	if b, err := os.ReadFile(filepath.Join(node, "etc/shadow")); err != nil || string(b) != "root:secret\n" {
		t.Errorf("the node's file changed: %q, %v", b, err)
	}

	// A file of the folder is the image; a missing one is made there.
	writeFile(t, filepath.Join(mounted, "present.img"), make([]byte, 1<<20))
	plan, err := m.Plan(ctx, hostDisk("/var/lib/vm-disks/present.img", virtv1.HostDiskExists), storage.Pod{})
	if err != nil || plan["host"].Path != "/var/run/private/vmi-disks/host/present.img" || plan["host"].CapacityBytes != 1<<20 {
		t.Fatalf("a hostDisk image in its folder: %+v, %v", plan, err)
	}
	vmi := hostDisk("/var/lib/vm-disks/new.img", virtv1.HostDiskExistsOrCreate)
	plan, err = m.Plan(ctx, vmi, storage.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Prepare(ctx, vmi, storage.Pod{}, plan); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(mounted, "new.img")); err != nil || fi.Size() != 16<<20 {
		t.Errorf("DiskOrCreate image in the mounted folder: %v, %v", fi, err)
	}
	if _, err := os.Stat("/var/lib/vm-disks/new.img"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the image was made at the spec's host path: %v", err)
	}
}
