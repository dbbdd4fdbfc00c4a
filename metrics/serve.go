package metrics

import (
	"net/http"
	"sort"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
)

// Handler serves g's series at any path in Prometheus' text format. A
// collector's error does not fail the scrape: what was gathered is served.
func Handler(g prometheus.Gatherer) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// Merge gathers from each of gs in turn; a family an earlier gatherer
// already returned is dropped from a later one. virt-local serves its
// components' registry together with controller-runtime's, and both may
// hold the Go and process collectors.
func Merge(gs ...prometheus.Gatherer) prometheus.Gatherer {
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		seen := map[string]bool{}
		var out []*dto.MetricFamily
		var errs prometheus.MultiError
		for _, g := range gs {
			mfs, err := g.Gather()
			errs.Append(err)
			for _, mf := range mfs {
				if !seen[mf.GetName()] {
					seen[mf.GetName()] = true
					out = append(out, mf)
				}
			}
		}
		sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
		return out, errs.MaybeUnwrap()
	})
}
