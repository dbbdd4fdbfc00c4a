package libvirt

import (
	"context"
	"time"

	"libvirt.org/go/libvirt"

	"github.com/virtkit/virtkit/virt/domain"
)

// AttachDevice adds a device; see domain.Manager.AttachDevice.
func (m *Manager) AttachDevice(ctx context.Context, name string, dev domain.Device, flags domain.DeviceFlags) error {
	xml, lflags, err := deviceArgs(opAttach, name, dev, flags)
	if err != nil {
		return err
	}
	return m.onDomain(ctx, opAttach, name, func(d *libvirt.Domain) error { return d.AttachDeviceFlags(xml, lflags) })
}

// DetachDevice removes a device; see domain.Manager.DetachDevice.
func (m *Manager) DetachDevice(ctx context.Context, name string, dev domain.Device, flags domain.DeviceFlags) error {
	xml, lflags, err := deviceArgs(opDetach, name, dev, flags)
	if err != nil {
		return err
	}
	return m.onDomain(ctx, opDetach, name, func(d *libvirt.Domain) error { return d.DetachDeviceFlags(xml, lflags) })
}

func deviceArgs(op, name string, dev domain.Device, flags domain.DeviceFlags) (string, libvirt.DomainDeviceModifyFlags, error) {
	if flags&(domain.DeviceLive|domain.DevicePersistent) == 0 {
		return "", 0, &domain.Error{Op: op, Domain: name, Kind: domain.ErrInvalidSpec, Message: "device flags: say live, persistent or both"}
	}
	if dev == nil {
		return "", 0, &domain.Error{Op: op, Domain: name, Kind: domain.ErrInvalidSpec, Message: "no device"}
	}
	xml, err := dev.Marshal()
	if err != nil {
		return "", 0, &domain.Error{Op: op, Domain: name, Kind: domain.ErrInvalidSpec, Message: "device: " + err.Error(), Err: err}
	}
	var lf libvirt.DomainDeviceModifyFlags
	if flags&domain.DeviceLive != 0 {
		lf |= libvirt.DOMAIN_DEVICE_MODIFY_LIVE
	}
	if flags&domain.DevicePersistent != 0 {
		lf |= libvirt.DOMAIN_DEVICE_MODIFY_CONFIG
	}
	return xml, lf, nil
}

// GuestAgentPing asks the guest agent for guest-ping; see domain.Manager.GuestAgentPing.
func (m *Manager) GuestAgentPing(ctx context.Context, name string) error {
	_, err := m.agent(ctx, opAgentPing, name, `{"execute":"guest-ping"}`, 5*time.Second)
	return err
}

// GuestAgentCommand sends a guest agent command; see domain.Manager.GuestAgentCommand.
func (m *Manager) GuestAgentCommand(ctx context.Context, name, command string, timeout time.Duration) (string, error) {
	return m.agent(ctx, opAgentCommand, name, command, timeout)
}

func (m *Manager) agent(ctx context.Context, op, name, command string, timeout time.Duration) (string, error) {
	// libvirt counts the agent's timeout in whole seconds.
	t := libvirt.DOMAIN_QEMU_AGENT_COMMAND_DEFAULT
	if timeout > 0 {
		t = libvirt.DomainQemuAgentCommandTimeout((timeout + time.Second - 1) / time.Second)
	}
	var reply string
	err := m.onDomain(ctx, op, name, func(d *libvirt.Domain) error {
		var err error
		reply, err = d.QemuAgentCommand(command, t, 0)
		return err
	})
	return reply, err
}
