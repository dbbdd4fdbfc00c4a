package benchkit

import (
	"math"
	"slices"
	"sort"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/virtkit/virtkit/controllers/handler"
	"github.com/virtkit/virtkit/metrics"
)

// Histogram is one series of a Prometheus histogram: its count, its sum and
// its cumulative buckets by upper bound (ascending).
type Histogram struct {
	Count   uint64
	Sum     float64
	Uppers  []float64
	Buckets []uint64 // cumulative counts, one per upper bound
}

// Stages are the handlers' start stages (metrics.StartStagesName), by stage.
type Stages map[string]Histogram

// GatherStages reads the handlers' start-stage histogram, by stage (every
// node's handler counts into the same series in virt-local).
func GatherStages(g prometheus.Gatherer) (Stages, error) {
	mfs, err := g.Gather()
	if err != nil {
		return nil, err
	}
	out := Stages{}
	for _, mf := range mfs {
		if mf.GetName() != metrics.StartStagesName {
			continue
		}
		for _, m := range mf.GetMetric() {
			h := m.GetHistogram()
			s := Histogram{Count: h.GetSampleCount(), Sum: h.GetSampleSum()}
			for _, b := range h.GetBucket() {
				s.Uppers = append(s.Uppers, b.GetUpperBound())
				s.Buckets = append(s.Buckets, b.GetCumulativeCount())
			}
			out[labels(m)["stage"]] = s
		}
	}
	return out, nil
}

// Sub is what s observed since before (same buckets).
func (s Stages) Sub(before Stages) Stages {
	out := Stages{}
	for k, h := range s {
		b, ok := before[k]
		if !ok {
			out[k] = h
			continue
		}
		d := Histogram{Count: h.Count - b.Count, Sum: h.Sum - b.Sum, Uppers: h.Uppers, Buckets: slices.Clone(h.Buckets)}
		for i := range d.Buckets {
			if i < len(b.Buckets) {
				d.Buckets[i] -= b.Buckets[i]
			}
		}
		if d.Count > 0 {
			out[k] = d
		}
	}
	return out
}

// Names are the stages observed, in the order a start runs them
// (handler.StartStages), then any others by name.
func (s Stages) Names() []string {
	var out []string
	for _, n := range handler.StartStages() {
		if _, ok := s[n]; ok {
			out = append(out, n)
		}
	}
	var rest []string
	for n := range s {
		if !slices.Contains(out, n) {
			rest = append(rest, n)
		}
	}
	sort.Strings(rest)
	return append(out, rest...)
}

// Mean is the histogram's mean, NaN without observations.
func (h Histogram) Mean() float64 {
	if h.Count == 0 {
		return math.NaN()
	}
	return h.Sum / float64(h.Count)
}

// Quantile estimates the q-quantile (0 < q < 1) as Prometheus's
// histogram_quantile does: linearly within the bucket it falls in, from 0
// for the first bucket; NaN without observations. Its error is the
// bucket's width.
func (h Histogram) Quantile(q float64) float64 {
	if h.Count == 0 || len(h.Buckets) == 0 {
		return math.NaN()
	}
	rank := q * float64(h.Count)
	i := sort.Search(len(h.Buckets), func(i int) bool { return float64(h.Buckets[i]) >= rank })
	if i == len(h.Buckets) {
		return h.Uppers[len(h.Uppers)-1] // beyond the last bound
	}
	lo, below := 0.0, uint64(0)
	if i > 0 {
		lo, below = h.Uppers[i-1], h.Buckets[i-1]
	}
	in := h.Buckets[i] - below
	if in == 0 {
		return h.Uppers[i]
	}
	return lo + (h.Uppers[i]-lo)*(rank-float64(below))/float64(in)
}
