package libvirt

import (
	"context"
	"sync"

	"libvirt.org/go/libvirt"

	"github.com/virtkit/virtkit/virt/domain"
)

// Events subscribes to the lifecycle and device events of every domain; see
// domain.Manager.Events.
func (m *Manager) Events(ctx context.Context) (<-chan domain.Event, error) {
	s := &subscriber{
		out:  make(chan domain.Event),
		wake: make(chan struct{}, 1),
		done: make(chan struct{}),
	}
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
	go s.run()
	go func() {
		select {
		case <-ctx.Done():
		case <-s.done:
		}
		m.mu.Lock()
		delete(m.subs, s)
		m.mu.Unlock()
		s.stop()
	}()
	return s.out, nil
}

// publishLocked queues e for every subscriber; m.mu must be held. It never
// blocks: libvirt's event loop, which calls it, must keep running.
func (m *Manager) publishLocked(e domain.Event) {
	for s := range m.subs {
		s.push(e)
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

// subscriber is one Events channel with an unbounded backlog, so that
// publishing never waits for a slow reader and order is kept.
type subscriber struct {
	out  chan domain.Event
	wake chan struct{}
	done chan struct{}

	mu       sync.Mutex
	queue    []domain.Event
	stopOnce sync.Once
}

func (s *subscriber) push(e domain.Event) {
	s.mu.Lock()
	s.queue = append(s.queue, e)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *subscriber) stop() { s.stopOnce.Do(func() { close(s.done) }) }

// run feeds the backlog to out, in order, until stopped; then closes out.
func (s *subscriber) run() {
	defer close(s.out)
	for {
		s.mu.Lock()
		if len(s.queue) == 0 {
			s.mu.Unlock()
			select {
			case <-s.wake:
				continue
			case <-s.done:
				return
			}
		}
		e := s.queue[0]
		s.queue[0] = domain.Event{}
		s.queue = s.queue[1:]
		s.mu.Unlock()
		select {
		case s.out <- e:
		case <-s.done:
			return
		}
	}
}
