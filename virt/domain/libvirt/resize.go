package libvirt

import (
	"context"

	"libvirt.org/go/libvirt"
	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/virt/domain"
)

var _ domain.Resizer = (*Manager)(nil)

// SetVCPUs sets the running domain's online vCPUs; see domain.Resizer.
func (m *Manager) SetVCPUs(ctx context.Context, name string, n uint) error {
	return m.onRunning(ctx, domain.OpSetVCPUs, name, func(d *libvirt.Domain, doc *libvirtxml.Domain) error {
		if err := domain.ResizedVCPUs(doc, name, n); err != nil {
			return err
		}
		return d.SetVcpusFlags(n, libvirt.DOMAIN_VCPU_LIVE)
	})
}

// SetPluggedMemory sets the requested size of the running domain's
// virtio-mem device; see domain.Resizer.
func (m *Manager) SetPluggedMemory(ctx context.Context, name string, bytes uint64) error {
	return m.onRunning(ctx, domain.OpSetPluggedMemory, name, func(d *libvirt.Domain, doc *libvirtxml.Domain) error {
		dev, err := domain.ResizedMemoryDevice(doc, name, bytes)
		if err != nil {
			return err
		}
		text, err := dev.Marshal()
		if err != nil {
			return &domain.Error{Op: domain.OpSetPluggedMemory, Domain: name, Kind: domain.ErrInvalidSpec, Message: "device: " + err.Error(), Err: err}
		}
		return d.UpdateDeviceFlags(text, libvirt.DOMAIN_DEVICE_MODIFY_LIVE)
	})
}

// onRunning calls fn with a running domain and its live document; a domain
// that is not running fails with ErrInvalidState.
func (m *Manager) onRunning(ctx context.Context, op, name string, fn func(*libvirt.Domain, *libvirtxml.Domain) error) error {
	return m.onDomain(ctx, op, name, func(d *libvirt.Domain) error {
		active, err := d.IsActive()
		if err != nil {
			return err
		}
		if !active {
			return &domain.Error{Op: op, Domain: name, Kind: domain.ErrInvalidState, Message: "domain is not running"}
		}
		text, err := d.GetXMLDesc(0)
		if err != nil {
			return err
		}
		doc := &libvirtxml.Domain{}
		if err := doc.Unmarshal(text); err != nil {
			return &domain.Error{Op: op, Domain: name, Message: "parsing libvirt's document: " + err.Error(), Err: err}
		}
		return fn(d, doc)
	})
}
