package domain

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	virtv1 "kubevirt.io/api/core/v1"
)

func TestDeviceName(t *testing.T) {
	for _, tc := range []struct {
		prefix string
		n      int
		want   string
	}{
		{"vd", 0, "vda"},
		{"vd", 1, "vdb"},
		{"vd", 25, "vdz"},
		{"vd", 26, "vdaa"},
		{"vd", 27, "vdab"},
		{"vd", 51, "vdaz"},
		{"vd", 52, "vdba"},
		{"vd", 701, "vdzz"},
		{"vd", 702, "vdaaa"},
		{"sd", 0, "sda"},
		{"sd", 25, "sdz"},
		{"sd", 26, "sdaa"},
		{"hd", 0, "hda"}, // a prefix without a table of names is built the same way
		{"hd", 27, "hdab"},
	} {
		if d := cmp.Diff(tc.want, DeviceName(tc.prefix, tc.n)); d != "" {
			t.Errorf("DeviceName(%q, %d) (-want +got):\n%s", tc.prefix, tc.n, d)
		}
	}
}

// The names of the first 26 come from a table; they must be what the
// general rule builds.
func TestDeviceNameTable(t *testing.T) {
	for _, prefix := range []string{"vd", "sd"} {
		for n := range 26 {
			want := prefix + string(rune('a'+n))
			if got := DeviceName(prefix, n); got != want {
				t.Errorf("DeviceName(%q, %d) = %q, want %q", prefix, n, got, want)
			}
		}
	}
}

func TestDevicePrefix(t *testing.T) {
	for _, tc := range []struct {
		bus  virtv1.DiskBus
		want string
	}{
		{virtv1.DiskBusVirtio, "vd"},
		{virtv1.DiskBusSCSI, "sd"},
		{virtv1.DiskBusSATA, "sd"},
		{virtv1.DiskBusUSB, "sd"},
	} {
		if d := cmp.Diff(tc.want, DevicePrefix(tc.bus)); d != "" {
			t.Errorf("DevicePrefix(%q) (-want +got):\n%s", tc.bus, d)
		}
	}
}

// Convert numbers the disks of each prefix on their own: sata, scsi and usb
// disks share the sd sequence.
func TestConvertDeviceNames(t *testing.T) {
	vmi := baseVMI()
	buses := []virtv1.DiskBus{virtv1.DiskBusVirtio, virtv1.DiskBusSATA, virtv1.DiskBusVirtio, virtv1.DiskBusSCSI, virtv1.DiskBusUSB}
	vmi.Spec.Domain.Devices.Disks = nil
	vmi.Spec.Volumes = vmi.Spec.Volumes[:0]
	for i, bus := range buses {
		name := string(rune('a' + i))
		vmi.Spec.Domain.Devices.Disks = append(vmi.Spec.Domain.Devices.Disks,
			virtv1.Disk{Name: name, DiskDevice: virtv1.DiskDevice{Disk: &virtv1.DiskTarget{Bus: bus}}})
		vmi.Spec.Volumes = append(vmi.Spec.Volumes, virtv1.Volume{Name: name, VolumeSource: virtv1.VolumeSource{
			ContainerDisk: &virtv1.ContainerDiskSource{Image: "example/disk:1"}}})
	}
	dom, err := Convert(vmi, testHost(vmi))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range dom.Devices.Disks {
		got = append(got, d.Target.Dev)
	}
	if d := cmp.Diff([]string{"vda", "sda", "vdb", "sdb", "sdc"}, got); d != "" {
		t.Errorf("device names (-want +got):\n%s", d)
	}
}
