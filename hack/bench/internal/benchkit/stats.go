package benchkit

import (
	"fmt"
	"slices"
	"time"
)

// Spread is the median, smallest and largest of some durations: what a
// benchmark reports of repeated runs, so that one slow run shows as the
// outlier it is instead of moving a mean.
type Spread struct{ Median, Min, Max time.Duration }

// SpreadOf is the Spread of ds (zero when there are none).
func SpreadOf(ds []time.Duration) Spread {
	if len(ds) == 0 {
		return Spread{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Spread{Median: m, Min: s[0], Max: s[len(s)-1]}
}

// String is "median (min-max)", to the millisecond.
func (s Spread) String() string {
	r := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	return fmt.Sprintf("%s (%s-%s)", r(s.Median), r(s.Min), r(s.Max))
}
