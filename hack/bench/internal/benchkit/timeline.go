package benchkit

import (
	"slices"
	"sync"
	"time"
)

// Timeline records when each guest's stages were first seen, e.g. from
// the watches of a benchmark (see CreateAndWait). It is safe for
// concurrent use.
type Timeline struct {
	mu     sync.Mutex
	when   map[string]map[string]time.Time // guest -> stage -> time
	counts map[string]int                  // stage -> guests that reached it
	order  []string                        // stages in the order first seen
}

// NewTimeline returns an empty Timeline.
func NewTimeline() *Timeline {
	return &Timeline{when: map[string]map[string]time.Time{}, counts: map[string]int{}}
}

// See records stage of guest now, unless it was seen before.
func (t *Timeline) See(guest, stage string) { t.At(guest, stage, time.Now()) }

// At records stage of guest at when, unless it was seen before.
func (t *Timeline) At(guest, stage string, when time.Time) {
	if guest == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.when[guest] == nil {
		t.when[guest] = map[string]time.Time{}
	}
	if _, seen := t.when[guest][stage]; seen {
		return
	}
	t.when[guest][stage] = when
	t.counts[stage]++
	if !slices.Contains(t.order, stage) {
		t.order = append(t.order, stage)
	}
}

// Count is how many guests reached stage.
func (t *Timeline) Count(stage string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.counts[stage]
}

// Since is, for every guest that reached both, the seconds from one stage
// to another.
func (t *Timeline) Since(from, to string) []float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []float64
	for _, s := range t.when {
		a, okA := s[from]
		b, okB := s[to]
		if okA && okB {
			out = append(out, b.Sub(a).Seconds())
		}
	}
	return out
}

// Stages lists the stages, ordered by their median time from "created".
func (t *Timeline) Stages() []string {
	t.mu.Lock()
	order := slices.Clone(t.order)
	t.mu.Unlock()
	med := map[string]float64{}
	for _, st := range order {
		med[st] = Percentile(t.Since("created", st), 50)
	}
	slices.SortStableFunc(order, func(a, b string) int {
		switch {
		case med[a] < med[b]:
			return -1
		case med[a] > med[b]:
			return 1
		}
		return 0
	})
	return order
}
