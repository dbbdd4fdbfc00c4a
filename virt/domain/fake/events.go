package fake

import (
	"context"
	"sync"

	"github.com/virtkit/virtkit/virt/domain"
)

// Events subscribes to every event the fake emits, in order; see
// domain.Manager.Events.
func (m *Manager) Events(ctx context.Context) (<-chan domain.Event, error) {
	if err := m.enter(ctx, domain.OpEvents, ""); err != nil {
		return nil, err
	}
	s := &subscriber{out: make(chan domain.Event), wake: make(chan struct{}, 1), done: make(chan struct{})}
	m.subs[s] = struct{}{}
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

// eventLocked publishes a domain event; m.mu must be held.
func (m *Manager) eventLocked(name string, t domain.EventType, detail int, device string) {
	m.publishLocked(domain.Event{Domain: name, Type: t, Detail: detail, Device: device, Time: m.now()})
}

func (m *Manager) publishLocked(e domain.Event) {
	for s := range m.subs {
		s.push(e)
	}
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
		s.queue = s.queue[1:]
		s.mu.Unlock()
		select {
		case s.out <- e:
		case <-s.done:
			return
		}
	}
}
