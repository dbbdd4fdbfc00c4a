package domaintest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/virtkit/virtkit/virt/domain"
)

// recorder keeps every event of a subscription.
type recorder struct {
	mu     sync.Mutex
	events []domain.Event
	closed bool
}

func record(ch <-chan domain.Event) *recorder {
	r := &recorder{}
	go func() {
		for e := range ch {
			r.mu.Lock()
			r.events = append(r.events, e)
			r.mu.Unlock()
		}
		r.mu.Lock()
		r.closed = true
		r.mu.Unlock()
	}()
	return r
}

func (r *recorder) snapshot() ([]domain.Event, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]domain.Event(nil), r.events...), r.closed
}

// waitFor waits until an event matching ok has been seen.
func (r *recorder) waitFor(t *testing.T, limit time.Duration, ok func(domain.Event) bool, what string) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		evs, _ := r.snapshot()
		for _, e := range evs {
			if ok(e) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s event after %s; seen:\n%s", what, limit, list(evs))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (r *recorder) waitClosed(t *testing.T, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		if _, closed := r.snapshot(); closed {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Events channel is still open %s after Close", limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// want is one expected event: a type and a detail (-1: any).
type want struct {
	typ    domain.EventType
	detail int
}

func (w want) String() string {
	if w.detail < 0 {
		return w.typ.String()
	}
	return fmt.Sprintf("%s/%d", w.typ, w.detail)
}

// stepEventsInOrder checks that the domain's lifecycle events arrived in
// the order the steps caused them. Other events may come in between
// (hypervisors differ in what else they report: shutdown notices, resumes
// around a reboot), but these must appear, in this order.
func stepEventsInOrder(t *testing.T, s *suite) {
	expected := []want{
		{domain.EventDefined, domain.DetailDefinedAdded},
		{domain.EventStarted, domain.DetailStartedBooted},
		{domain.EventSuspended, domain.DetailSuspendedPaused},
		{domain.EventResumed, domain.DetailResumedUnpaused},
	}
	if s.tg.Caps.ACPIShutdown {
		expected = append(expected, want{domain.EventStopped, domain.DetailStoppedShutdown})
	}
	expected = append(expected,
		want{domain.EventStarted, domain.DetailStartedBooted},
		want{domain.EventStopped, domain.DetailStoppedDestroyed},
	)
	if s.tg.Caps.StartPaused {
		expected = append(expected,
			want{domain.EventStarted, -1},
			want{domain.EventSuspended, -1},
			want{domain.EventResumed, -1},
			want{domain.EventStopped, domain.DetailStoppedDestroyed},
		)
	}
	expected = append(expected, want{domain.EventUndefined, -1})

	deadline := time.Now().Add(s.tg.timeout())
	for {
		evs, _ := s.events.snapshot()
		var mine []domain.Event
		for _, e := range evs {
			if e.Domain == s.name && e.Type.Lifecycle() {
				mine = append(mine, e)
			}
		}
		matched := subsequence(mine, expected)
		if matched == len(expected) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("lifecycle events of %s: matched %d of %v in order, missing %v; seen:\n%s",
				s.name, matched, expected, expected[matched], list(mine))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// subsequence returns how many of expected appear in evs in order.
func subsequence(evs []domain.Event, expected []want) int {
	i := 0
	for _, e := range evs {
		if i == len(expected) {
			break
		}
		w := expected[i]
		if e.Type == w.typ && (w.detail < 0 || e.Detail == w.detail) {
			i++
		}
	}
	return i
}

func list(evs []domain.Event) string {
	var b strings.Builder
	for _, e := range evs {
		b.WriteString("  ")
		b.WriteString(e.String())
		b.WriteString("\n")
	}
	return b.String()
}
