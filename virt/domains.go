package virt

import (
	"context"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/virt/domain"
)

// Domains is what a Machine needs of a hypervisor connection: one domain's
// definition, lifecycle and state, its documents, and its devices (the
// spare PCIe ports of a define, NIC hotplug). Every domain.Manager is one;
// a test may pass anything smaller that does these nine.
type Domains interface {
	Define(ctx context.Context, doc *libvirtxml.Domain) error
	Start(ctx context.Context, name string, opts domain.StartOptions) error
	Shutdown(ctx context.Context, name string) error
	Destroy(ctx context.Context, name string) error
	Undefine(ctx context.Context, name string) error
	State(ctx context.Context, name string) (domain.State, domain.Reason, error)
	XML(ctx context.Context, name string, opts domain.XMLOptions) (*libvirtxml.Domain, error)
	AttachDevice(ctx context.Context, name string, dev domain.Device, flags domain.DeviceFlags) error
	DetachDevice(ctx context.Context, name string, dev domain.Device, flags domain.DeviceFlags) error
}

var _ Domains = domain.Manager(nil)
