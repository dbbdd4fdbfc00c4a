package fake

import (
	"context"

	"github.com/virtkit/virtkit/virt/domain"
)

// Events subscribes to every event the fake emits, in order; see
// domain.Manager.Events.
func (m *Manager) Events(ctx context.Context) (<-chan domain.Event, error) {
	if err := m.enter(ctx, domain.OpEvents, ""); err != nil {
		return nil, err
	}
	s := domain.NewEventQueue()
	m.subs[s] = struct{}{}
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

// eventLocked publishes a domain event; m.mu must be held.
func (m *Manager) eventLocked(name string, t domain.EventType, detail int, device string) {
	m.publishLocked(domain.Event{Domain: name, Type: t, Detail: detail, Device: device, Time: m.now()})
}

func (m *Manager) publishLocked(e domain.Event) {
	for s := range m.subs {
		s.Push(e)
	}
}
