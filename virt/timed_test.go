package virt_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/virtkit/virtkit/virt"
)

func TestStepsTimedReportsEachRun(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(0, 0))
	boom := errors.New("boom")
	took := func(d time.Duration, err error) func(context.Context, *virt.Machine) error {
		return func(context.Context, *virt.Machine) error {
			clk.SetTime(clk.Now().Add(d))
			return err
		}
	}
	undone := false
	steps := virt.Steps{
		{Name: "a", Run: took(2*time.Second, nil), Undo: func(context.Context, *virt.Machine) error { undone = true; return nil }},
		{Name: "b", Run: took(30*time.Millisecond, boom)},
		{Name: "c"}, // no Run: nothing to time
	}
	var got []virt.StepTiming
	timed := steps.Timed(clk, func(st virt.StepTiming) { got = append(got, st) })
	if diff := cmp.Diff(steps.Names(), timed.Names()); diff != "" {
		t.Fatalf("names (-want +got):\n%s", diff)
	}
	for _, s := range timed {
		if s.Run != nil {
			_ = s.Run(context.Background(), nil)
		}
	}
	want := []virt.StepTiming{{Step: "a", Took: 2 * time.Second}, {Step: "b", Took: 30 * time.Millisecond, Err: boom}}
	if diff := cmp.Diff(want, got, cmpopts.EquateErrors()); diff != "" {
		t.Errorf("timings (-want +got):\n%s", diff)
	}
	if timed[2].Run != nil {
		t.Error("a step without Run got one")
	}
	_ = timed[0].Undo(context.Background(), nil)
	if !undone {
		t.Error("the timed step lost its Undo")
	}
}
