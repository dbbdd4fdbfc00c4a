package benchkit

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/virtkit/virtkit/controllers/handler"
	"github.com/virtkit/virtkit/metrics"
)

func TestStagesFromTheHandlersHistogram(t *testing.T) {
	reg := prometheus.NewRegistry()
	s, err := metrics.NewStartStages(reg)
	if err != nil {
		t.Fatal(err)
	}
	s.ObserveStart(handler.StageReport, time.Second)
	before, err := GatherStages(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond} {
		s.ObserveStart("define", d)
	}
	s.ObserveStart(handler.StageLauncherReady, 2*time.Second)
	s.ObserveStart("my-step", time.Millisecond)
	after, err := GatherStages(reg)
	if err != nil {
		t.Fatal(err)
	}
	got := after.Sub(before)
	if _, ok := got[handler.StageReport]; ok {
		t.Errorf("a stage observed only before is in the difference: %+v", got[handler.StageReport])
	}
	names := got.Names()
	want := []string{handler.StageLauncherReady, "define", "my-step"}
	if len(names) != len(want) {
		t.Fatalf("names %v, want %v", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("names %v, want %v", names, want)
		}
	}
	d := got["define"]
	if math.Abs(d.Mean()-0.2) > 1e-9 {
		t.Errorf("mean %v, want 0.2", d.Mean())
	}
	// The median falls in the bucket that holds 0.2 s: within its width
	// (buckets 1.6x apart), not exactly.
	if m := d.Quantile(0.5); m < 0.2/1.6 || m > 0.2*1.6 {
		t.Errorf("median %v, want about 0.2", m)
	}
	if !math.IsNaN((Histogram{}).Quantile(0.5)) {
		t.Error("an empty histogram has a median")
	}
}
