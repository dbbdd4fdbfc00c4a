package virt

import (
	"context"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/virt/domain"
)

// Domains is what a Machine needs of a hypervisor connection: one domain's
// definition, lifecycle and state. Every domain.Manager is one; a test may
// pass anything smaller that does these six.
type Domains interface {
	Define(ctx context.Context, doc *libvirtxml.Domain) error
	Start(ctx context.Context, name string, opts domain.StartOptions) error
	Shutdown(ctx context.Context, name string) error
	Destroy(ctx context.Context, name string) error
	Undefine(ctx context.Context, name string) error
	State(ctx context.Context, name string) (domain.State, domain.Reason, error)
}

var _ Domains = domain.Manager(nil)
