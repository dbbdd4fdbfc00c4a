package libvirt_test

import (
	"context"
	"testing"
	"time"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/virt/domain/domaintest"
	"github.com/virtkit/virtkit/virt/domain/libvirt"
)

// testURI is libvirt's in-process test driver: no daemon, no guest, state
// shared by every connection of the process.
const testURI = "test:///default"

// The contract on libvirt's test driver, which has no console, no agent,
// no device hotplug and no paused start: the suite checks that each of those
// fails with the right sentinel.
func TestContractTestDriver(t *testing.T) {
	domaintest.Run(t, func(t *testing.T) domaintest.Target {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		m, err := libvirt.New(ctx, testURI)
		if err != nil {
			t.Fatalf("New(%s): %v", testURI, err)
		}
		return domaintest.Target{
			Manager: m,
			Domain:  testDocument,
			Disk: &libvirtxml.DomainDisk{
				Device: "disk",
				Source: &libvirtxml.DomainDiskSource{File: &libvirtxml.DomainDiskSourceFile{File: "/var/lib/virtkit/test/data.qcow2"}},
				Target: &libvirtxml.DomainDiskTarget{Dev: "vdb", Bus: "virtio"},
			},
			Timeout: 10 * time.Second,
			Caps:    domaintest.Capabilities{ACPIShutdown: true, Screenshot: true}, // test:/// answers a picture of its own
		}
	})
}

// testDocument is a small domain the test driver accepts.
func testDocument(name string) *libvirtxml.Domain {
	return &libvirtxml.Domain{
		Type:   "qemu",
		Name:   name,
		Memory: &libvirtxml.DomainMemory{Value: 128, Unit: "MiB"},
		VCPU:   &libvirtxml.DomainVCPU{Value: 1},
		OS:     &libvirtxml.DomainOS{Type: &libvirtxml.DomainOSType{Arch: "x86_64", Machine: "q35", Type: "hvm"}},
	}
}
