package virt

import (
	"context"
	"time"

	"k8s.io/utils/clock"
)

// StepTiming is what Steps.Timed reports after a step's Run: the step's
// name, how long it took and its error (nil when it worked).
type StepTiming struct {
	Step string
	Took time.Duration
	Err  error
}

// Timed returns the chain with every step's Run timed on clk and reported
// to observe when it returns, in the goroutine that ran it. Undo and Adopt
// are not timed. The chain's order and names stay as they were, so Timed
// composes with the other edits; apply it last to time the steps they added.
func (s Steps) Timed(clk clock.PassiveClock, observe func(StepTiming)) Steps {
	out := make(Steps, len(s))
	for i, st := range s {
		run := st.Run
		if run != nil {
			st.Run = func(ctx context.Context, m *Machine) error {
				began := clk.Now()
				err := run(ctx, m)
				observe(StepTiming{Step: st.Name, Took: clk.Since(began), Err: err})
				return err
			}
		}
		out[i] = st
	}
	return out
}
