package testguest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"libvirt.org/go/libvirtxml"
)

// Lines and facts of the test guest.
const (
	BootedMarker  = "VIRTKIT-GUEST-BOOTED"
	ReadyMarker   = "VIRTKIT-READY"
	PowerOff      = "VIRTKIT-POWEROFF"
	HeartbeatLine = "VIRTKIT-HEARTBEAT"
	// DataMarker starts each data disk: "VIRTKIT-DATA n=N", N counting the
	// boots that wrote it.
	DataMarker = "VIRTKIT-DATA"
	// ResourcesLine says, at boot and at each change, how many CPUs are
	// online and the memory total: "VIRTKIT-RESOURCES cpus=N memory_kib=M".
	ResourcesLine = "VIRTKIT-RESOURCES"
	HTTPPort      = 80
)

// Artifacts are the files of the test guest.
type Artifacts struct {
	// Kernel and Initramfs boot the guest directly; Cmdline is their kernel command line.
	Kernel, Initramfs, Cmdline string
	// Disk is a BIOS-bootable qcow2 image holding the same kernel and initramfs.
	Disk string
}

// Build runs hack/guest/build.sh of the checkout at repoRoot into
// repoRoot/_output/guest (a no-op when current, a few seconds otherwise) and
// returns the artifacts.
func Build(ctx context.Context, repoRoot string) (Artifacts, error) {
	out := filepath.Join(repoRoot, "_output", "guest")
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(repoRoot, "hack", "guest", "build.sh"), out)
	if b, err := cmd.CombinedOutput(); err != nil {
		return Artifacts{}, fmt.Errorf("building the test guest (make guest): %w\n%s", err, b)
	}
	cmdline, err := os.ReadFile(filepath.Join(out, "cmdline"))
	if err != nil {
		return Artifacts{}, fmt.Errorf("test guest: %w", err)
	}
	return Artifacts{
		Kernel:    filepath.Join(out, "vmlinuz"),
		Initramfs: filepath.Join(out, "initramfs.gz"),
		Cmdline:   strings.TrimSpace(string(cmdline)),
		Disk:      filepath.Join(out, "disk.qcow2"),
	}, nil
}

// Domain returns a domain document that boots the guest's kernel directly
// under software emulation (type qemu, TCG; never KVM: the development
// machines expose a /dev/kvm that cannot run a stock guest) on q35, with 1 vCPU, memMiB of memory and its serial console
// written to consoleLog.
func Domain(name string, a Artifacts, memMiB uint, consoleLog string) *libvirtxml.Domain {
	return &libvirtxml.Domain{
		Type:   "qemu",
		Name:   name,
		Memory: &libvirtxml.DomainMemory{Value: memMiB, Unit: "MiB"},
		VCPU:   &libvirtxml.DomainVCPU{Value: 1},
		OS: &libvirtxml.DomainOS{
			Type:    &libvirtxml.DomainOSType{Arch: "x86_64", Machine: "q35", Type: "hvm"},
			Kernel:  a.Kernel,
			Initrd:  a.Initramfs,
			Cmdline: a.Cmdline,
		},
		Features:   &libvirtxml.DomainFeatureList{ACPI: &libvirtxml.DomainFeature{}},
		OnPoweroff: "destroy",
		OnReboot:   "restart",
		OnCrash:    "destroy",
		Devices: &libvirtxml.DomainDeviceList{
			Serials: []libvirtxml.DomainSerial{{
				Source: &libvirtxml.DomainChardevSource{File: &libvirtxml.DomainChardevSourceFile{Path: consoleLog}},
				Target: &libvirtxml.DomainSerialTarget{Port: new(uint)},
			}},
			MemBalloon: &libvirtxml.DomainMemBalloon{Model: "none"},
		},
	}
}
