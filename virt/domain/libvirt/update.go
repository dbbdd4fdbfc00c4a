package libvirt

import (
	"context"

	"libvirt.org/go/libvirt"

	"github.com/virtkit/virtkit/virt/domain"
)

var _ domain.DeviceUpdater = (*Manager)(nil)

// UpdateDevice changes a device in place; see domain.DeviceUpdater.
func (m *Manager) UpdateDevice(ctx context.Context, name string, dev domain.Device, flags domain.DeviceFlags) error {
	xml, lflags, err := deviceArgs(domain.OpUpdateDevice, name, dev, flags)
	if err != nil {
		return err
	}
	return m.onDomain(ctx, domain.OpUpdateDevice, name, func(d *libvirt.Domain) error { return d.UpdateDeviceFlags(xml, lflags) })
}
