package domain

import "sync"

// EventQueue is one Events subscription for a Manager implementation: a
// channel fed from an unbounded backlog, so that publishing (often from a
// hypervisor's event loop, which must not block) never waits for a slow
// reader, and events keep their order. Both virt/domain/libvirt and
// virt/domain/fake use it; so can an integrator's own Manager.
type EventQueue struct {
	out  chan Event
	wake chan struct{}
	done chan struct{}

	mu       sync.Mutex
	queue    []Event
	stopOnce sync.Once
}

// NewEventQueue starts a queue; Stop ends it and closes its channel.
func NewEventQueue() *EventQueue {
	q := &EventQueue{out: make(chan Event), wake: make(chan struct{}, 1), done: make(chan struct{})}
	go q.run()
	return q
}

// C is the subscriber's channel. It is closed after Stop.
func (q *EventQueue) C() <-chan Event { return q.out }

// Done is closed by Stop.
func (q *EventQueue) Done() <-chan struct{} { return q.done }

// Push queues e; it never blocks.
func (q *EventQueue) Push(e Event) {
	q.mu.Lock()
	q.queue = append(q.queue, e)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Stop ends the subscription: the backlog is dropped and C is closed. It
// may be called more than once.
func (q *EventQueue) Stop() { q.stopOnce.Do(func() { close(q.done) }) }

// run feeds the backlog to out, in order, until stopped; then closes out.
func (q *EventQueue) run() {
	defer close(q.out)
	for {
		q.mu.Lock()
		if len(q.queue) == 0 {
			q.mu.Unlock()
			select {
			case <-q.wake:
				continue
			case <-q.done:
				return
			}
		}
		e := q.queue[0]
		q.queue[0] = Event{}
		q.queue = q.queue[1:]
		q.mu.Unlock()
		select {
		case q.out <- e:
		case <-q.done:
			return
		}
	}
}
