package fake

import (
	"context"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/virt/domain"
)

var _ domain.DeviceUpdater = (*Manager)(nil)

// UpdateDevice changes the media of a CD-ROM (a disk matched by its
// target) in the live document, the definition, or both; see
// domain.DeviceUpdater. libvirt changes nothing else of a disk in place,
// and neither does the fake: other devices, or a disk that is not a
// CD-ROM, fail with ErrInvalidSpec. The modelled guest sees the change at
// once.
func (m *Manager) UpdateDevice(ctx context.Context, name string, dev domain.Device, flags domain.DeviceFlags) error {
	op := domain.OpUpdateDevice
	return m.onDomain(ctx, op, name, func(d *fakeDomain) error {
		invalid := func(msg string) error {
			return &domain.Error{Op: op, Domain: name, Kind: domain.ErrInvalidSpec, Message: msg}
		}
		text, docs, err := deviceDocs(op, name, d, dev, flags)
		if err != nil {
			return err
		}
		disk := libvirtxml.DomainDisk{}
		if err := disk.Unmarshal(text); err != nil {
			return invalid("XML error: " + err.Error())
		}
		if disk.Device != "cdrom" || disk.Target == nil {
			return invalid("unsupported configuration: only the media of a cdrom can change")
		}
		var found []*libvirtxml.DomainDisk
		for _, doc := range docs {
			var at *libvirtxml.DomainDisk
			if doc.Devices != nil {
				for i := range doc.Devices.Disks {
					if x := &doc.Devices.Disks[i]; x.Device == "cdrom" && x.Target != nil && x.Target.Dev == disk.Target.Dev {
						at = x
					}
				}
			}
			if at == nil {
				return invalid("unsupported configuration: no cdrom " + disk.Target.Dev)
			}
			found = append(found, at)
		}
		for _, x := range found {
			x.Source, x.Driver, x.ReadOnly = disk.Source, disk.Driver, disk.ReadOnly
		}
		return nil
	})
}
