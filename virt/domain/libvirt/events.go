package libvirt

import (
	"context"

	"libvirt.org/go/libvirt"

	"github.com/virtkit/virtkit/virt/domain"
)

// Events subscribes to the lifecycle and device events of every domain; see
// domain.Manager.Events.
func (m *Manager) Events(ctx context.Context) (<-chan domain.Event, error) {
	s := domain.NewEventQueue()
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, &domain.Error{Op: domain.OpEvents, Kind: domain.ErrClosed}
	}
	m.subs[s] = struct{}{}
	// Nobody may be calling: a subscriber waits for the connection's return.
	if (m.cur == nil || m.cur.lost.Load()) && !m.reconnecting {
		m.reconnecting = true
		go m.reconnectLoop()
	}
	m.mu.Unlock()
	go func() {
		select {
		case <-ctx.Done():
		case <-s.Done():
		}
		m.mu.Lock()
		delete(m.subs, s)
		m.mu.Unlock()
		s.Stop()
	}()
	return s.C(), nil
}

// publishLocked queues e for every subscriber; m.mu must be held. It never
// blocks: libvirt's event loop, which calls it, must keep running.
func (m *Manager) publishLocked(e domain.Event) {
	for s := range m.subs {
		s.Push(e)
	}
}

func (m *Manager) publish(e domain.Event) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.publishLocked(e)
}

// registerEvents subscribes c to the domain events the Manager reports.
func (m *Manager) registerEvents(c *conn) error {
	domainEvent := func(d *libvirt.Domain, t domain.EventType, detail int, device string) {
		name, err := d.GetName()
		if err != nil {
			return
		}
		m.publish(domain.Event{Domain: name, Type: t, Detail: detail, Device: device, Time: m.now()})
	}
	regs := []func() (int, error){
		func() (int, error) {
			return c.c.DomainEventLifecycleRegister(nil, func(_ *libvirt.Connect, d *libvirt.Domain, e *libvirt.DomainEventLifecycle) {
				domainEvent(d, domain.EventType(e.Event), e.Detail, "")
			})
		},
		func() (int, error) {
			return c.c.DomainEventDeviceAddedRegister(nil, func(_ *libvirt.Connect, d *libvirt.Domain, e *libvirt.DomainEventDeviceAdded) {
				domainEvent(d, domain.EventDeviceAdded, 0, e.DevAlias)
			})
		},
		func() (int, error) {
			return c.c.DomainEventDeviceRemovedRegister(nil, func(_ *libvirt.Connect, d *libvirt.Domain, e *libvirt.DomainEventDeviceRemoved) {
				domainEvent(d, domain.EventDeviceRemoved, 0, e.DevAlias)
			})
		},
		func() (int, error) {
			return c.c.DomainEventDeviceRemovalFailedRegister(nil, func(_ *libvirt.Connect, d *libvirt.Domain, e *libvirt.DomainEventDeviceRemovalFailed) {
				domainEvent(d, domain.EventDeviceRemovalFailed, 0, e.DevAlias)
			})
		},
		func() (int, error) {
			return c.c.DomainEventRebootRegister(nil, func(_ *libvirt.Connect, d *libvirt.Domain) {
				domainEvent(d, domain.EventReboot, 0, "")
			})
		},
	}
	for _, reg := range regs {
		id, err := reg()
		if err != nil {
			for _, id := range c.callbacks {
				_ = c.c.DomainEventDeregister(id)
			}
			c.callbacks = nil
			return err
		}
		c.callbacks = append(c.callbacks, id)
	}
	return nil
}
