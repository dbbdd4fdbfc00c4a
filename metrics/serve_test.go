package metrics_test

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/virtkit/virtkit/metrics"
)

// Two registries that both hold the Go collector serve one copy of its
// series, and each registry's own series.
func TestMergeAndHandler(t *testing.T) {
	a, b := prometheus.NewRegistry(), prometheus.NewRegistry()
	a.MustRegister(collectors.NewGoCollector())
	b.MustRegister(collectors.NewGoCollector())
	ca := prometheus.NewCounter(prometheus.CounterOpts{Name: "only_in_a_total", Help: "a"})
	cb := prometheus.NewCounter(prometheus.CounterOpts{Name: "only_in_b_total", Help: "b"})
	a.MustRegister(ca)
	b.MustRegister(cb)
	ca.Inc()
	cb.Add(2)

	rec := httptest.NewRecorder()
	metrics.Handler(metrics.Merge(a, b)).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	if rec.Code != 200 {
		t.Fatalf("%d: %s", rec.Code, body)
	}
	for _, want := range []string{"only_in_a_total 1\n", "only_in_b_total 2\n"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("no %q in:\n%s", want, body)
		}
	}
	if n := strings.Count(string(body), "# TYPE go_goroutines gauge"); n != 1 {
		t.Errorf("go_goroutines served %d times, want once", n)
	}
}
