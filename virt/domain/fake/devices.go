package fake

import (
	"context"
	"encoding/xml"
	"fmt"
	"strings"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/virt/domain"
)

// AttachDevice adds a disk or interface to the live document, the
// definition, or both, and a PCI controller to the definition; see
// domain.Manager.AttachDevice. Other device kinds fail with ErrUnsupported.
func (m *Manager) AttachDevice(ctx context.Context, name string, dev domain.Device, flags domain.DeviceFlags) error {
	return m.modifyDevice(ctx, domain.OpAttachDevice, name, dev, flags, true)
}

// DetachDevice removes a matching disk (by target) or interface (by MAC).
// The modelled guest releases devices at once, so EventDeviceRemoved follows
// immediately; see domain.Manager.DetachDevice.
func (m *Manager) DetachDevice(ctx context.Context, name string, dev domain.Device, flags domain.DeviceFlags) error {
	return m.modifyDevice(ctx, domain.OpDetachDevice, name, dev, flags, false)
}

func (m *Manager) modifyDevice(ctx context.Context, op, name string, dev domain.Device, flags domain.DeviceFlags, attach bool) error {
	return m.onDomain(ctx, op, name, func(d *fakeDomain) error {
		text, docs, err := deviceDocs(op, name, d, dev, flags)
		if err != nil {
			return err
		}
		// Check every document before changing any, so that a failure
		// leaves nothing half-done.
		apply, err := deviceChange(op, name, text, attach, d)
		if err != nil {
			return err
		}
		for _, doc := range docs {
			if err := apply(doc, true); err != nil {
				return err
			}
		}
		d.hotAlias = ""
		for _, doc := range docs {
			if err := apply(doc, false); err != nil {
				return err
			}
		}
		if flags&domain.DeviceLive != 0 {
			t := domain.EventDeviceAdded
			if !attach {
				t = domain.EventDeviceRemoved
			}
			m.eventLocked(name, t, 0, d.hotAlias)
		}
		return nil
	})
}

// deviceDocs checks a device change's arguments and returns the device's
// text and the documents flags name: the live one, the definition or both.
func deviceDocs(op, name string, d *fakeDomain, dev domain.Device, flags domain.DeviceFlags) (string, []*libvirtxml.Domain, error) {
	if flags&(domain.DeviceLive|domain.DevicePersistent) == 0 {
		return "", nil, &domain.Error{Op: op, Domain: name, Kind: domain.ErrInvalidSpec, Message: "device flags: say live, persistent or both"}
	}
	if dev == nil {
		return "", nil, &domain.Error{Op: op, Domain: name, Kind: domain.ErrInvalidSpec, Message: "no device"}
	}
	text, err := dev.Marshal()
	if err != nil {
		return "", nil, &domain.Error{Op: op, Domain: name, Kind: domain.ErrInvalidSpec, Message: err.Error(), Err: err}
	}
	if flags&domain.DeviceLive != 0 && d.live == nil {
		return "", nil, invalidState(op, name, "domain is not running")
	}
	var docs []*libvirtxml.Domain
	if flags&domain.DeviceLive != 0 {
		docs = append(docs, d.live)
	}
	if flags&domain.DevicePersistent != 0 {
		docs = append(docs, d.config)
	}
	return text, docs, nil
}

// deviceChange parses a device and returns the change it makes to a
// document; with check set the change only reports whether it applies.
// Changing the live document records the device's alias in d.hotAlias.
func deviceChange(op, name, text string, attach bool, d *fakeDomain) (func(doc *libvirtxml.Domain, check bool) error, error) {
	var root struct{ XMLName xml.Name }
	if err := xml.Unmarshal([]byte(text), &root); err != nil {
		return nil, &domain.Error{Op: op, Domain: name, Kind: domain.ErrInvalidSpec, Message: "XML error: " + err.Error(), Err: err}
	}
	invalid := func(msg string) error {
		return &domain.Error{Op: op, Domain: name, Kind: domain.ErrInvalidSpec, Message: msg}
	}
	switch root.XMLName.Local {
	case "disk":
		disk := libvirtxml.DomainDisk{}
		if err := disk.Unmarshal(text); err != nil {
			return nil, invalid("XML error: " + err.Error())
		}
		if disk.Target == nil || disk.Target.Dev == "" {
			return nil, invalid("XML error: missing target information for device")
		}
		dev := disk.Target.Dev
		return func(doc *libvirtxml.Domain, check bool) error {
			if doc.Devices == nil {
				doc.Devices = &libvirtxml.DomainDeviceList{}
			}
			at := -1
			for i, x := range doc.Devices.Disks {
				if x.Target != nil && x.Target.Dev == dev {
					at = i
				}
			}
			switch {
			case attach && at >= 0:
				return invalid("unsupported configuration: target " + dev + " already exists")
			case !attach && at < 0:
				return &domain.Error{Op: op, Domain: name, Kind: domain.ErrNotFound, Message: "device not found: no target device " + dev}
			case check:
				return nil
			case attach:
				add := disk
				if doc == d.live {
					// libvirt keeps a user alias ("ua-" prefix) and names
					// the device itself otherwise.
					if add.Alias == nil || !strings.HasPrefix(add.Alias.Name, "ua-") {
						d.aliases++
						add.Alias = &libvirtxml.DomainAlias{Name: fmt.Sprintf("virtio-disk%d", d.aliases)}
					}
					d.hotAlias = add.Alias.Name
				}
				doc.Devices.Disks = append(doc.Devices.Disks, add)
			default:
				if doc == d.live && doc.Devices.Disks[at].Alias != nil {
					d.hotAlias = doc.Devices.Disks[at].Alias.Name
				}
				doc.Devices.Disks = append(doc.Devices.Disks[:at:at], doc.Devices.Disks[at+1:]...)
			}
			return nil
		}, nil
	case "interface":
		iface := libvirtxml.DomainInterface{}
		if err := iface.Unmarshal(text); err != nil {
			return nil, invalid("XML error: " + err.Error())
		}
		mac := ""
		if iface.MAC != nil {
			mac = strings.ToLower(iface.MAC.Address)
		}
		return func(doc *libvirtxml.Domain, check bool) error {
			if doc.Devices == nil {
				doc.Devices = &libvirtxml.DomainDeviceList{}
			}
			at := -1
			for i, x := range doc.Devices.Interfaces {
				if x.MAC != nil && mac != "" && strings.ToLower(x.MAC.Address) == mac {
					at = i
				}
			}
			switch {
			case !attach && at < 0:
				return &domain.Error{Op: op, Domain: name, Kind: domain.ErrNotFound, Message: "device not found: no interface with MAC " + mac}
			case check:
				return nil
			case attach:
				add := iface
				if doc == d.live {
					if add.Alias == nil || !strings.HasPrefix(add.Alias.Name, "ua-") {
						d.aliases++
						add.Alias = &libvirtxml.DomainAlias{Name: fmt.Sprintf("net%d", d.aliases)}
					}
					d.hotAlias = add.Alias.Name
				}
				doc.Devices.Interfaces = append(doc.Devices.Interfaces, add)
			default:
				if doc == d.live && doc.Devices.Interfaces[at].Alias != nil {
					d.hotAlias = doc.Devices.Interfaces[at].Alias.Name
				}
				doc.Devices.Interfaces = append(doc.Devices.Interfaces[:at:at], doc.Devices.Interfaces[at+1:]...)
			}
			return nil
		}, nil
	case "controller":
		return controllerChange(op, name, text, attach, d, invalid)
	}
	return nil, &domain.Error{Op: op, Domain: name, Kind: domain.ErrUnsupported,
		Message: "the fake models hotplug of disks and interfaces only, not <" + root.XMLName.Local + ">"}
}

// controllerChange adds a PCI controller to the definition, as libvirt
// does for one attached to a defined domain; the running domain takes
// none, and none is detached.
func controllerChange(op, name, text string, attach bool, d *fakeDomain, invalid func(string) error) (func(doc *libvirtxml.Domain, check bool) error, error) {
	c := libvirtxml.DomainController{}
	if err := c.Unmarshal(text); err != nil {
		return nil, invalid("XML error: " + err.Error())
	}
	if !attach || c.Type != "pci" || c.Index == nil {
		return nil, &domain.Error{Op: op, Domain: name, Kind: domain.ErrUnsupported,
			Message: "the fake models attaching PCI controllers with an index only"}
	}
	return func(doc *libvirtxml.Domain, check bool) error {
		if doc == d.live {
			return &domain.Error{Op: op, Domain: name, Kind: domain.ErrUnsupported,
				Message: "Operation not supported: live attach of device 'controller' is not supported"}
		}
		if doc.Devices == nil {
			doc.Devices = &libvirtxml.DomainDeviceList{}
		}
		for _, x := range doc.Devices.Controllers {
			if x.Type == c.Type && x.Index != nil && *x.Index == *c.Index {
				return invalid(fmt.Sprintf("unsupported configuration: target pci controller index %d already exists", *c.Index))
			}
		}
		if !check {
			doc.Devices.Controllers = append(doc.Devices.Controllers, c)
		}
		return nil
	}, nil
}
