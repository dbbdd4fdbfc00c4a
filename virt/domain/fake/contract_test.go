package fake_test

import (
	"regexp"
	"testing"
	"time"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/virt/domain"
	"github.com/virtkit/virtkit/virt/domain/domaintest"
	"github.com/virtkit/virtkit/virt/domain/fake"
)

// The fake passes the same contract as the libvirt Manager, with a modelled
// guest agent, console and hotplug.
func TestContract(t *testing.T) {
	domaintest.Run(t, func(t *testing.T) domaintest.Target {
		m := fake.New()
		return domaintest.Target{
			Manager:     m,
			Domain:      Document,
			Disk:        Disk("/var/lib/virtkit/fake/data.qcow2"),
			Timeout:     5 * time.Second,
			ConsoleLine: regexp.MustCompile(`^VIRTKIT-HEARTBEAT \d+$`),
			GuestSays: func(name, line string) {
				if err := m.GuestPrint(name, line); err != nil {
					t.Errorf("GuestPrint: %v", err)
				}
			},
			Block: func() func() { return m.Hold(domain.OpState) },
			Caps: domaintest.Capabilities{
				StartPaused:  true,
				ACPIShutdown: true,
				Console:      true,
				Agent:        true,
				Screenshot:   true,
				Hotplug:      true,
				DeviceEvents: true,
				Resize:       true,
				MediaChange:  true,
			},
		}
	})
}

// Document is a small domain with a guest agent channel and a VGA display.
func Document(name string) *libvirtxml.Domain {
	return &libvirtxml.Domain{
		Type:   "qemu",
		Name:   name,
		Memory: &libvirtxml.DomainMemory{Value: 256, Unit: "MiB"},
		VCPU:   &libvirtxml.DomainVCPU{Value: 1},
		OS:     &libvirtxml.DomainOS{Type: &libvirtxml.DomainOSType{Arch: "x86_64", Machine: "q35", Type: "hvm"}},
		Devices: &libvirtxml.DomainDeviceList{
			Channels: []libvirtxml.DomainChannel{{
				Source: &libvirtxml.DomainChardevSource{UNIX: &libvirtxml.DomainChardevSourceUNIX{Mode: "bind"}},
				Target: &libvirtxml.DomainChannelTarget{VirtIO: &libvirtxml.DomainChannelTargetVirtIO{Name: "org.qemu.guest_agent.0"}},
			}},
			Videos: []libvirtxml.DomainVideo{{Model: libvirtxml.DomainVideoModel{Type: "vga"}}},
		},
	}
}

// Disk is a qcow2 virtio disk vdb.
func Disk(path string) *libvirtxml.DomainDisk {
	return &libvirtxml.DomainDisk{
		Device: "disk",
		Driver: &libvirtxml.DomainDiskDriver{Name: "qemu", Type: "qcow2"},
		Source: &libvirtxml.DomainDiskSource{File: &libvirtxml.DomainDiskSourceFile{File: path}},
		Target: &libvirtxml.DomainDiskTarget{Dev: "vdb", Bus: "virtio"},
	}
}
