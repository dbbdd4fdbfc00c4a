package main

import (
	"fmt"
	"math"
	"net/http"
	"sync/atomic"

	"github.com/virtkit/virtkit/virt/storage/importer/contract"
)

// gauge is the import's progress in percent, served as
// contract.ProgressMetric in Prometheus' text format.
type gauge struct {
	owner string
	bits  atomic.Uint64
}

func newGauge(owner string) *gauge { return &gauge{owner: owner} }

// set records done bytes of total; an unknown total reports nothing.
func (g *gauge) set(done, total int64) {
	if total <= 0 {
		return
	}
	g.bits.Store(math.Float64bits(min(100, float64(done)*100/float64(total))))
}

func (g *gauge) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	fmt.Fprintf(w, "# HELP %s The import progress in percentage\n# TYPE %s counter\n%s{ownerUID=%q} %g\n",
		contract.ProgressMetric, contract.ProgressMetric, contract.ProgressMetric, g.owner, math.Float64frombits(g.bits.Load()))
}
