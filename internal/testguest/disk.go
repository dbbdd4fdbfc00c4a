package testguest

import (
	"context"
	"fmt"
	"os/exec"

	"libvirt.org/go/libvirtxml"
)

// CreateOverlay makes a qcow2 copy-on-write overlay at path on top of base,
// so that a guest booting from it never writes the built image.
func CreateOverlay(ctx context.Context, base, path string) error {
	b, err := exec.CommandContext(ctx, "qemu-img", "create", "-q", "-f", "qcow2", "-F", "qcow2", "-b", base, path).CombinedOutput()
	if err != nil {
		return fmt.Errorf("qemu-img create overlay %s on %s: %w: %s", path, base, err, b)
	}
	return nil
}

// BootFromDisk switches doc from direct kernel boot to BIOS boot (syslinux)
// from the qcow2 image at disk, attached as virtio disk vda.
func BootFromDisk(doc *libvirtxml.Domain, disk string) {
	doc.OS.Kernel, doc.OS.Initrd, doc.OS.Cmdline = "", "", ""
	doc.OS.BootDevices = []libvirtxml.DomainBootDevice{{Dev: "hd"}}
	doc.Devices.Disks = []libvirtxml.DomainDisk{{
		Device: "disk",
		Driver: &libvirtxml.DomainDiskDriver{Name: "qemu", Type: "qcow2"},
		Source: &libvirtxml.DomainDiskSource{File: &libvirtxml.DomainDiskSourceFile{File: disk}},
		Target: &libvirtxml.DomainDiskTarget{Dev: "vda", Bus: "virtio"},
	}}
}
