package main

import (
	"slices"
	"sync"
	"time"
)

// timeline records when each guest's stages were first seen.
type timeline struct {
	mu    sync.Mutex
	when  map[string]map[string]time.Time // guest -> stage -> time
	order []string                        // stages in the order first seen
}

func newTimeline() *timeline { return &timeline{when: map[string]map[string]time.Time{}} }

// see records stage of guest now, unless it was seen before.
func (t *timeline) see(guest, stage string) { t.at(guest, stage, time.Now()) }

// at records stage of guest at when, unless it was seen before.
func (t *timeline) at(guest, stage string, when time.Time) {
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
	if !slices.Contains(t.order, stage) {
		t.order = append(t.order, stage)
	}
}

// count is how many guests reached stage.
func (t *timeline) count(stage string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, s := range t.when {
		if _, ok := s[stage]; ok {
			n++
		}
	}
	return n
}

// since is, for every guest that reached both, the seconds from one stage
// to another.
func (t *timeline) since(from, to string) []float64 {
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

// stages lists the stages, ordered by their median time from "created".
func (t *timeline) stages() []string {
	t.mu.Lock()
	order := slices.Clone(t.order)
	t.mu.Unlock()
	med := map[string]float64{}
	for _, st := range order {
		med[st] = percentile(t.since("created", st), 50)
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
