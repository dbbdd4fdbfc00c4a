package fake

import (
	"context"

	"github.com/virtkit/virtkit/virt/domain"
)

var _ domain.Resizer = (*Manager)(nil)

// SetVCPUs sets the online vCPUs of the live document (<vcpu current>);
// see domain.Resizer. The modelled guest takes them at once.
func (m *Manager) SetVCPUs(ctx context.Context, name string, n uint) error {
	return m.onDomain(ctx, domain.OpSetVCPUs, name, func(d *fakeDomain) error {
		if d.live == nil {
			return invalidState(domain.OpSetVCPUs, name, "domain is not running")
		}
		if err := domain.ResizedVCPUs(d.live, name, n); err != nil {
			return err
		}
		d.live.VCPU.Current = n
		if n == d.live.VCPU.Value {
			d.live.VCPU.Current = 0 // libvirt omits current when all are online
		}
		return nil
	})
}

// SetPluggedMemory sets the requested size of the live document's
// virtio-mem device; see domain.Resizer. The modelled guest plugs it at
// once: <currentMemory> grows by what the device adds.
func (m *Manager) SetPluggedMemory(ctx context.Context, name string, bytes uint64) error {
	return m.onDomain(ctx, domain.OpSetPluggedMemory, name, func(d *fakeDomain) error {
		if d.live == nil {
			return invalidState(domain.OpSetPluggedMemory, name, "domain is not running")
		}
		dev, err := domain.ResizedMemoryDevice(d.live, name, bytes)
		if err != nil {
			return err
		}
		for i := range d.live.Devices.Memorydevs {
			md := &d.live.Devices.Memorydevs[i]
			if md.Model != "virtio-mem" {
				continue
			}
			var was uint64
			if r := md.Target.Requested; r != nil {
				was = domain.MemoryBytes(r.Value, r.Unit)
			}
			*md = *dev
			if cm := d.live.CurrentMemory; cm != nil {
				now := domain.MemoryBytes(cm.Value, cm.Unit) + bytes - was
				cm.Value, cm.Unit = uint(now>>10), "KiB"
			}
			break
		}
		return nil
	})
}
