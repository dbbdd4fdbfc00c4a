package storage_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/storage"
)

// BenchmarkNoCloudISO builds a NoCloud ISO (meta-data, a 4 KiB user-data,
// network-config) into a file, as Prepare does for every VMI start.
func BenchmarkNoCloudISO(b *testing.B) {
	dir := b.TempDir()
	files := map[string][]byte{
		"meta-data":      []byte("instance-id: vm.ns\nlocal-hostname: vm\n"),
		"user-data":      []byte("#cloud-config\n" + strings.Repeat("# padding line of user data\n", 146)),
		"network-config": []byte("version: 2\nethernets:\n  eth0:\n    dhcp4: true\n"),
	}
	p := filepath.Join(dir, "noCloud.iso")
	b.ReportAllocs()
	for b.Loop() {
		f, err := os.Create(p)
		if err != nil {
			b.Fatal(err)
		}
		if err := storage.WriteISO(f, storage.NoCloudLabel, files); err != nil {
			b.Fatal(err)
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/iso")
}

// BenchmarkOverlay prepares a containerDisk: a qcow2 overlay on a 1 GiB
// base, written to a fresh file and moved into place (Prepare's path,
// including the fsync).
func BenchmarkOverlay(b *testing.B) {
	dir := b.TempDir()
	l := storage.Layout{EphemeralDir: filepath.Join(dir, "e"), ContainerDisksDir: filepath.Join(dir, "c")}
	if err := os.MkdirAll(l.ContainerDisksDir, 0o755); err != nil {
		b.Fatal(err)
	}
	base, err := os.Create(filepath.Join(l.ContainerDisksDir, "disk_0.img"))
	if err != nil {
		b.Fatal(err)
	}
	if err := base.Truncate(1 << 30); err != nil {
		b.Fatal(err)
	}
	base.Close()
	vmi := vmiWith(vol("root", virtv1.VolumeSource{ContainerDisk: &virtv1.ContainerDiskSource{Image: "x"}}))
	m := storage.New(storage.WithLayout(l))
	ctx := context.Background()
	plan, err := m.Plan(ctx, vmi, storage.Pod{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := m.Prepare(ctx, vmi, storage.Pod{}, plan); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/overlay")
}

// BenchmarkPlan plans a VMI of six volumes against real files.
func BenchmarkPlan(b *testing.B) {
	dir := b.TempDir()
	l := storage.Layout{EphemeralDir: filepath.Join(dir, "e"), PrivateDir: filepath.Join(dir, "p"), ContainerDisksDir: filepath.Join(dir, "c")}
	for _, f := range []string{filepath.Join(l.PrivateDir, "vmi-disks", "eph", "disk.img"), filepath.Join(l.ContainerDisksDir, "disk_2.img")} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(f, make([]byte, 1<<20), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for _, d := range []string{filepath.Join(l.PrivateDir, "vmi-disks", "data"), filepath.Join(l.PrivateDir, "config-map", "cm")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	m := storage.New(storage.WithLayout(l))
	vmi := allVolumesVMI()
	pod := storage.Pod{Volumes: map[string]storage.VolumeFacts{"data": {CapacityBytes: 1 << 30}}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Plan(ctx, vmi, pod); err != nil {
			b.Fatal(err)
		}
	}
}
