package domaintest

import (
	"testing"

	"github.com/virtkit/virtkit/virt/domain"
)

func TestSubsequenceToleratesExtrasButNotReordering(t *testing.T) {
	expected := []want{{domain.EventStarted, 0}, {domain.EventSuspended, -1}, {domain.EventStopped, domain.DetailStoppedDestroyed}}
	ev := func(typ domain.EventType, detail int) domain.Event { return domain.Event{Type: typ, Detail: detail} }
	for _, tc := range []struct {
		name string
		evs  []domain.Event
		want int
	}{
		{"exact", []domain.Event{ev(domain.EventStarted, 0), ev(domain.EventSuspended, 3), ev(domain.EventStopped, 1)}, 3},
		{"extras between", []domain.Event{ev(domain.EventDefined, 0), ev(domain.EventStarted, 0), ev(domain.EventResumed, 0), ev(domain.EventSuspended, 0), ev(domain.EventStopped, 0), ev(domain.EventStopped, 1)}, 3},
		{"reordered", []domain.Event{ev(domain.EventSuspended, 0), ev(domain.EventStarted, 0), ev(domain.EventStopped, 1)}, 1},
		{"wrong detail", []domain.Event{ev(domain.EventStarted, 0), ev(domain.EventSuspended, 0), ev(domain.EventStopped, 0)}, 2},
	} {
		if got := subsequence(tc.evs, expected); got != tc.want {
			t.Errorf("%s: matched %d, want %d", tc.name, got, tc.want)
		}
	}
}
