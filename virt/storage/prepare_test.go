package storage_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/virt/storage"
)

// podRoot makes a launcher pod's folders below a temporary root and returns
// the root and the layout.
func podRoot(t *testing.T) (string, storage.Layout) {
	t.Helper()
	root := t.TempDir()
	l := storage.Layout{
		EphemeralDir:      filepath.Join(root, "ephemeral"),
		PrivateDir:        filepath.Join(root, "private"),
		ContainerDisksDir: filepath.Join(root, "container-disks"),
		HotplugDir:        filepath.Join(root, "hotplug"),
		DevDir:            filepath.Join(root, "dev"),
	}
	return root, l
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(path, 0o755); err != nil {
		t.Fatal(err)
	}
}

// projected lays out files as the kubelet projects a configMap: the real
// files in a timestamped folder, ..data linking to it, each key a link
// through ..data.
func projected(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	stamp := filepath.Join(dir, "..2026_11_30_19_00_00.1")
	for name, body := range files {
		writeFile(t, filepath.Join(stamp, name), []byte(body))
	}
	if err := os.Symlink(filepath.Base(stamp), filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	for name := range files {
		if err := os.Symlink(filepath.Join("..data", name), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
}

// tree lists every path below root.
func tree(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		out = append(out, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

func sizeOf(t *testing.T, path string) (length, allocated int64) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size(), st.Sys().(*syscall.Stat_t).Blocks * 512
}

func allVolumesVMI() *virtv1.VirtualMachineInstance {
	return vmiWith(
		vol("data", pvc("data-claim")),
		vol("eph", virtv1.VolumeSource{Ephemeral: &virtv1.EphemeralVolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "golden"}}}),
		vol("root", virtv1.VolumeSource{ContainerDisk: &virtv1.ContainerDiskSource{Image: "example/disk"}}),
		vol("scratch", virtv1.VolumeSource{EmptyDisk: &virtv1.EmptyDiskSource{Capacity: resource.MustParse("32Mi")}}),
		vol("ci", virtv1.VolumeSource{CloudInitNoCloud: &virtv1.CloudInitNoCloudSource{UserData: "#!/bin/sh\necho hi\n"}}),
		vol("cm", virtv1.VolumeSource{ConfigMap: &virtv1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "app"}, VolumeLabel: "appcfg"}}),
	)
}

// allVolumesFiles makes what the pod holds for allVolumesVMI in layout l:
// the claim's folder, the ephemeral volume's base (returned), the
// containerDisk's image and the config map's files.
func allVolumesFiles(t *testing.T, l storage.Layout) (base string) {
	t.Helper()
	mkdir(t, filepath.Join(l.PrivateDir, "vmi-disks", "data"))
	base = filepath.Join(l.PrivateDir, "vmi-disks", "eph", "disk.img")
	writeFile(t, base, make([]byte, 8<<20))
	writeFile(t, filepath.Join(l.ContainerDisksDir, "disk_2.img"), make([]byte, 4<<20))
	projected(t, filepath.Join(l.PrivateDir, "config-map", "cm"), map[string]string{"ks.cfg": "text\n", "app-config.yaml": "a: 1\n"})
	return base
}

// Plan and Prepare on real files: every source is created as planned.
func TestPrepare(t *testing.T) {
	ctx := context.Background()
	_, l := podRoot(t)
	allVolumesFiles(t, l)
	// A hostDisk's folder is mounted at its claim folder (the launcher
	// pod's hostPath volume): the image is made there.
	mkdir(t, filepath.Join(l.PrivateDir, "vmi-disks", "host"))
	hostImg := filepath.Join(l.PrivateDir, "vmi-disks", "host", "h.img")
	vmi := allVolumesVMI()
	vmi.Spec.Volumes = append(vmi.Spec.Volumes, vol("host", virtv1.VolumeSource{HostDisk: &virtv1.HostDisk{
		Path: "/var/lib/vm-disks/h.img", Type: virtv1.HostDiskExistsOrCreate, Capacity: resource.MustParse("16Mi")}}))
	vmi.Spec.Domain.Devices.Disks = append(vmi.Spec.Domain.Devices.Disks, virtv1.Disk{Name: "host"})
	pod := storage.Pod{Volumes: map[string]storage.VolumeFacts{"data": {CapacityBytes: 64 << 20}}}

	m := storage.New(storage.WithLayout(l))
	plan, err := m.Plan(ctx, vmi, pod)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Prepare(ctx, vmi, pod, plan); err != nil {
		t.Fatal(err)
	}

	// Every image is what the plan says it is, read back from its header.
	for name, p := range plan {
		info, err := storage.OSInspector{}.Inspect(ctx, p.Path)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if info.Format != p.Format {
			t.Errorf("%s: %s is %s, plan says %s", name, p.Path, info.Format, p.Format)
		}
		if p.CapacityBytes != 0 && info.VirtualSize != p.CapacityBytes {
			t.Errorf("%s: virtual size %d, plan says %d", name, info.VirtualSize, p.CapacityBytes)
		}
		if info.BackingFile != p.BackingPath || info.BackingFormat != string(p.BackingFormat) {
			t.Errorf("%s: backing %s (%s), plan says %s (%s)", name, info.BackingFile, info.BackingFormat, p.BackingPath, p.BackingFormat)
		}
	}
	// The images made for this guest (overlays, ISOs with a secret's or
	// the user's data) are for the QEMU user only.
	for _, name := range []string{"ci", "cm", "eph", "root", "scratch"} {
		fi, err := os.Stat(plan[name].Path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %s has mode %v, want 0600", name, plan[name].Path, fi.Mode().Perm())
		}
	}
	// disk.img: 64 MiB less 5.5%, in whole MiB, sparse.
	length, alloc := sizeOf(t, plan["data"].Path)
	if length != 60<<20 || alloc > 1<<20 {
		t.Errorf("disk.img: length %d, allocated %d; want 60 MiB, sparse", length, alloc)
	}
	if length, alloc := sizeOf(t, hostImg); length != 16<<20 || alloc > 1<<20 {
		t.Errorf("host disk: length %d, allocated %d; want 16 MiB, sparse", length, alloc)
	}
	if length, _ := sizeOf(t, plan["scratch"].Path); length > 1<<20 {
		t.Errorf("emptyDisk file is %d bytes; a fresh qcow2 is its metadata only", length)
	}
	if diff := cmp.Diff(map[string]string{"app-config.yaml": "a: 1\n", "ks.cfg": "text\n"}, isoFiles(t, plan["cm"].Path, "appcfg")); diff != "" {
		t.Errorf("config map ISO (-want +got):\n%s", diff)
	}
	ci := isoFiles(t, plan["ci"].Path, "cidata")
	if diff := cmp.Diff(map[string]string{
		"meta-data": "instance-id: vm.ns\nlocal-hostname: vm\n",
		"user-data": "#!/bin/sh\necho hi\n",
	}, ci); diff != "" {
		t.Errorf("NoCloud ISO (-want +got):\n%s", diff)
	}

	// A second start in the same pod: the claim's image is used as it is,
	// overlays and ISOs are made afresh, the emptyDisk is kept.
	plan2, err := m.Plan(ctx, vmi, pod)
	if err != nil {
		t.Fatal(err)
	}
	for name, create := range map[string]bool{"data": false, "host": false, "scratch": false, "eph": true, "root": true, "ci": true, "cm": true} {
		if plan2[name].Create != create {
			t.Errorf("second plan: %s create=%v, want %v", name, plan2[name].Create, create)
		}
	}
	if err := m.Prepare(ctx, vmi, pod, plan2); err != nil {
		t.Fatal(err)
	}

	// Release removes what lives with the VMI and nothing else.
	if err := m.Release(ctx, plan2); err != nil {
		t.Fatal(err)
	}
	for name, p := range plan2 {
		_, err := os.Stat(p.Path)
		if p.Discardable() != errors.Is(err, fs.ErrNotExist) {
			t.Errorf("after Release, %s (%s): %v", name, p.Path, err)
		}
	}
	if err := m.Release(ctx, plan2); err != nil {
		t.Errorf("a second Release: %v", err)
	}
}

// A Prepare that fails half-way leaves the pod as it found it.
func TestPrepareAllOrNothing(t *testing.T) {
	ctx := context.Background()
	root, l := podRoot(t)
	mkdir(t, filepath.Join(l.PrivateDir, "vmi-disks", "data"))
	writeFile(t, filepath.Join(l.PrivateDir, "vmi-disks", "eph", "disk.img"), make([]byte, 8<<20))
	writeFile(t, filepath.Join(l.ContainerDisksDir, "disk_2.img"), make([]byte, 4<<20))
	projected(t, filepath.Join(l.PrivateDir, "config-map", "cm"), map[string]string{"ks.cfg": "x"})
	vmi := allVolumesVMI()
	pod := storage.Pod{Volumes: map[string]storage.VolumeFacts{"data": {CapacityBytes: 64 << 20}}}
	m := storage.New(storage.WithLayout(l))
	plan, err := m.Plan(ctx, vmi, pod)
	if err != nil {
		t.Fatal(err)
	}
	before := tree(t, root)

	// The last step (by volume name) fails after the others were staged.
	plan["zzz"] = storage.DiskPlan{Volume: "zzz", Kind: "bogus", Create: true, Path: filepath.Join(l.EphemeralDir, "zzz", "x")}
	err = m.Prepare(ctx, vmi, pod, plan)
	var ve *storage.VolumeError
	if !errors.As(err, &ve) || ve.Volume != "zzz" {
		t.Fatalf("Prepare: %v, want a VolumeError naming zzz", err)
	}
	if diff := cmp.Diff(before, tree(t, root)); diff != "" {
		t.Errorf("a failed Prepare changed the pod (-before +after):\n%s", diff)
	}

	// A disk.img that appeared after planning is never overwritten, and
	// what was staged meanwhile goes away.
	delete(plan, "zzz")
	img := plan["data"].Path
	writeFile(t, img, []byte("someone else's data"))
	before = tree(t, root)
	if err := m.Prepare(ctx, vmi, pod, plan); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Prepare over an existing disk.img: %v", err)
	}
	if b, _ := os.ReadFile(img); string(b) != "someone else's data" {
		t.Errorf("disk.img was overwritten: %q", b)
	}
	if diff := cmp.Diff(before, tree(t, root)); diff != "" {
		t.Errorf("a failed Prepare changed the pod (-before +after):\n%s", diff)
	}
}

// A failed Plan has looked at the pod only.
func TestPlanErrorTouchesNothing(t *testing.T) {
	root, l := podRoot(t)
	mkdir(t, filepath.Join(l.PrivateDir, "vmi-disks", "data"))
	before := tree(t, root)
	m := storage.New(storage.WithLayout(l))
	_, err := m.Plan(context.Background(), allVolumesVMI(), storage.Pod{})
	if err == nil {
		t.Fatal("Plan without the eph base, the container disk and the config map succeeded")
	}
	for _, v := range []string{`"data"`, `"eph"`, `"root"`, `"cm"`} {
		if !strings.Contains(err.Error(), v) {
			t.Errorf("error does not name volume %s: %v", v, err)
		}
	}
	if diff := cmp.Diff(before, tree(t, root)); diff != "" {
		t.Errorf("Plan changed the pod (-before +after):\n%s", diff)
	}
}

// A preparation killed before its commit leaves a temporary image (for a
// claim, a whole sparse disk) next to the final one: the next preparation
// of that image removes it, and nothing else.
func TestPrepareSweepsLeftovers(t *testing.T) {
	ctx := context.Background()
	_, l := podRoot(t)
	dir := filepath.Join(l.PrivateDir, "vmi-disks", "data")
	mkdir(t, dir)
	leftovers := []string{".disk.img.vkt-1234", ".disk.img.vkt-5678.old"}
	for _, name := range leftovers {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(1 << 30); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	kept := []string{".other.img.vkt-1", "notes.txt"}
	for _, name := range kept {
		writeFile(t, filepath.Join(dir, name), []byte("keep\n"))
	}
	outside := filepath.Join(t.TempDir(), "node-file")
	writeFile(t, outside, []byte("node\n"))
	if err := os.Symlink(outside, filepath.Join(dir, ".disk.img.vkt-link")); err != nil {
		t.Fatal(err)
	}
	kept = append(kept, ".disk.img.vkt-link")

	vmi := vmiWith(vol("data", pvc("data-claim")))
	pod := storage.Pod{Volumes: map[string]storage.VolumeFacts{"data": {CapacityBytes: 64 << 20}}}
	m := storage.New(storage.WithLayout(l))
	plan, err := m.Plan(ctx, vmi, pod)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Prepare(ctx, vmi, pod, plan); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	want := append([]string{"disk.img"}, kept...)
	sort.Strings(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the claim's folder after Prepare (-want +got):\n%s", diff)
	}
	if b, err := os.ReadFile(outside); err != nil || string(b) != "node\n" {
		t.Errorf("the node file behind a link: %q, %v", b, err)
	}
}

// With WithOwner every image Prepare makes is the QEMU user's, from the
// moment it is written: a new claim's disk.img, overlays, ISOs, an
// emptyDisk. An image that was there (the ephemeral volume's base) keeps
// its owner; a claim's existing disk.img, which QEMU writes, is given to
// it once the new images are in place.
func TestPrepareGivesImagesToTheOwner(t *testing.T) {
	testenv.Integration(t) // chown needs root
	ctx := context.Background()
	_, l := podRoot(t)
	base := allVolumesFiles(t, l)
	old := filepath.Join(l.PrivateDir, "vmi-disks", "old", "disk.img")
	writeFile(t, old, make([]byte, 1<<20))
	vmi := allVolumesVMI()
	vmi.Spec.Volumes = append(vmi.Spec.Volumes, vol("old", pvc("old-claim")))
	vmi.Spec.Domain.Devices.Disks = append(vmi.Spec.Domain.Devices.Disks, virtv1.Disk{Name: "old"})
	pod := storage.Pod{Volumes: map[string]storage.VolumeFacts{"data": {CapacityBytes: 64 << 20}, "old": {CapacityBytes: 64 << 20}}}
	m := storage.New(storage.WithLayout(l), storage.WithOwner(107, 107))
	plan, err := m.Plan(ctx, vmi, pod)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Prepare(ctx, vmi, pod, plan); err != nil {
		t.Fatal(err)
	}
	if p := plan["old"]; p.Create || p.Path != old {
		t.Fatalf("the claim with a disk.img: planned %+v, want its image %s used as it is", p, old)
	}
	for name, p := range plan {
		if !p.Create && name != "old" {
			continue
		}
		st, err := os.Stat(p.Path)
		if err != nil {
			t.Fatal(err)
		}
		sys := st.Sys().(*syscall.Stat_t)
		if sys.Uid != 107 || sys.Gid != 107 {
			t.Errorf("%s: %s is %d:%d, want 107:107", name, p.Path, sys.Uid, sys.Gid)
		}
	}
	st, err := os.Stat(base)
	if err != nil {
		t.Fatal(err)
	}
	if sys := st.Sys().(*syscall.Stat_t); sys.Uid != uint32(os.Getuid()) {
		t.Errorf("the ephemeral volume's base became %d's", sys.Uid)
	}
}

// A Block claim's device, read-only too, is given to the QEMU user: it is
// the pod's own node, and QEMU could not open it otherwise.
func TestPrepareGivesBlockDevicesToTheOwner(t *testing.T) {
	testenv.Integration(t) // mknod and chown need root
	ctx := context.Background()
	_, l := podRoot(t)
	mkdir(t, l.DevDir)
	vmi := vmiWith(vol("blk", pvc("blk-claim")), vol("ro", pvc("ro-claim")))
	pod := storage.Pod{Volumes: map[string]storage.VolumeFacts{
		"blk": {Mode: storage.VolumeModeBlock}, "ro": {Mode: storage.VolumeModeBlock, ReadOnly: true}}}
	for i, name := range []string{"blk", "ro"} {
		// Loop devices' numbers: nothing need be attached to them.
		if err := syscall.Mknod(filepath.Join(l.DevDir, name), syscall.S_IFBLK|0o660, int(7<<8|i)); err != nil {
			t.Fatal(err)
		}
	}
	m := storage.New(storage.WithLayout(l), storage.WithOwner(107, 107))
	plan, err := m.Plan(ctx, vmi, pod)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Prepare(ctx, vmi, pod, plan); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"blk", "ro"} {
		p := plan[name]
		st, err := os.Lstat(p.Path)
		if err != nil {
			t.Fatal(err)
		}
		if sys := st.Sys().(*syscall.Stat_t); p.Source != storage.SourceBlock || sys.Uid != 107 || sys.Gid != 107 {
			t.Errorf("%s: planned %+v, its device %d:%d; want a block source given to 107:107", name, p, sys.Uid, sys.Gid)
		}
	}
}

// A claim's disk.img that is a link is not followed to give its target
// to the QEMU user: Prepare fails, naming the volume, and the target keeps
// its owner.
func TestPrepareDoesNotGiveALinksTarget(t *testing.T) {
	testenv.Integration(t) // chown needs root
	ctx := context.Background()
	_, l := podRoot(t)
	target := filepath.Join(t.TempDir(), "node-file")
	writeFile(t, target, make([]byte, 1<<20))
	link := filepath.Join(l.PrivateDir, "vmi-disks", "old", "disk.img")
	mkdir(t, filepath.Dir(link))
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	vmi := vmiWith(vol("old", pvc("old-claim")))
	pod := storage.Pod{Volumes: map[string]storage.VolumeFacts{"old": {CapacityBytes: 64 << 20}}}
	m := storage.New(storage.WithLayout(l), storage.WithOwner(107, 107))
	plan, err := m.Plan(ctx, vmi, pod)
	if err != nil {
		t.Fatal(err)
	}
	err = m.Prepare(ctx, vmi, pod, plan)
	var ve *storage.VolumeError
	if !errors.As(err, &ve) || ve.Volume != "old" {
		t.Fatalf("Prepare: %v, want a VolumeError naming volume old", err)
	}
	st, err := os.Stat(target)
	if err != nil {
		t.Fatal(err)
	}
	if sys := st.Sys().(*syscall.Stat_t); sys.Uid != uint32(os.Getuid()) {
		t.Errorf("the link's target became %d's", sys.Uid)
	}
}

// A hotpluggable claim that is not mounted in the pod is planned in the
// hotplug folder with the size of the image to make, but Prepare makes
// none there: the image is made in the claim and bound in later, and a
// blank one in its place would be attached instead.
func TestPrepareLeavesHotplugImagesToTheirClaims(t *testing.T) {
	ctx := context.Background()
	_, l := podRoot(t)
	mkdir(t, l.HotplugDir)
	vmi := vmiWith(vol("hot", virtv1.VolumeSource{PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{
		PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "hot-claim"}, Hotpluggable: true}}))
	pod := storage.Pod{Volumes: map[string]storage.VolumeFacts{"hot": {CapacityBytes: 64 << 20}}}
	m := storage.New(storage.WithLayout(l))
	plan, err := m.Plan(ctx, vmi, pod)
	if err != nil {
		t.Fatal(err)
	}
	p := plan["hot"]
	if want := filepath.Join(l.HotplugDir, "hot.img"); !p.Create || p.Path != want || p.CapacityBytes != 60<<20 {
		t.Fatalf("plan %+v: want Create at %s, 60 MiB", p, want)
	}
	if err := m.Prepare(ctx, vmi, pod, plan); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(p.Path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Prepare made %s: %v", p.Path, err)
	}
}
