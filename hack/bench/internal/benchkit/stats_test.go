package benchkit

import (
	"testing"
	"time"
)

func TestSpreadOf(t *testing.T) {
	ms := func(ns ...int) []time.Duration {
		var out []time.Duration
		for _, n := range ns {
			out = append(out, time.Duration(n)*time.Millisecond)
		}
		return out
	}
	for _, tc := range []struct {
		in   []time.Duration
		want string
	}{
		{ms(600, 4800, 610), "610ms (600ms-4.8s)"},
		{ms(10, 30, 20, 40), "25ms (10ms-40ms)"},
		{nil, "0s (0s-0s)"},
	} {
		if got := SpreadOf(tc.in).String(); got != tc.want {
			t.Errorf("SpreadOf(%v) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
