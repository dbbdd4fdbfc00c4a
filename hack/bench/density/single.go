package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/hack/bench/internal/benchkit"
	"github.com/virtkit/virtkit/hack/bench/internal/plain"
)

// singleSummary is -single's machine-readable line.
type singleSummary struct {
	runs                 int
	local, floor         benchkit.Spread
	ratioToPlainOfMedian float64
}

func (s singleSummary) String() string {
	return fmt.Sprintf("single_runs=%d p50_s=%.3f min_s=%.3f max_s=%.3f plain_p50_s=%.3f ratio_to_plain=%.2f",
		s.runs, s.local.Median.Seconds(), s.local.Min.Seconds(), s.local.Max.Seconds(), s.floor.Median.Seconds(), s.ratioToPlainOfMedian)
}

// runSingle is -single: one guest at a time, o.single times on each side
// after a warm-up start on each side that is not counted (the capability
// cache is warm on both sides from the start; the warm-up fills the page
// cache with the guest's disk, QEMU and libvirt, and on virt-local the
// node's image folder and every component's caches). Each guest runs until
// it is seen running, then goes before the next one starts.
func runSingle(ctx context.Context, o options) (singleSummary, error) {
	if err := o.absRepo(); err != nil {
		return singleSummary{}, err
	}
	host, _ := os.Hostname()
	fmt.Printf("machine: %s, one guest at a time, %d counted starts after a warm-up on each side, %d MiB, software emulation\n", host, o.single, o.memMiB)
	secs, err := plain.Sequential(ctx, o.repo, o.memMiB, o.single)
	if err != nil {
		return singleSummary{}, fmt.Errorf("plain libvirt run: %w", err)
	}
	floor := make([]time.Duration, len(secs))
	for i, s := range secs {
		floor[i] = time.Duration(s * float64(time.Second))
	}
	fmt.Printf("plain libvirt, one guest at a time: define -> running %s over %d runs\n", benchkit.SpreadOf(floor), len(floor))
	local, err := localSingle(ctx, o)
	if err != nil {
		return singleSummary{}, fmt.Errorf("virt-local run: %w", err)
	}
	s := singleSummary{runs: o.single, local: benchkit.SpreadOf(local), floor: benchkit.SpreadOf(floor)}
	s.ratioToPlainOfMedian = s.local.Median.Seconds() / s.floor.Median.Seconds()
	fmt.Println(s)
	return s, nil
}

// localSingle starts o.single+1 VMIs on a fresh virt-local, each after the
// one before is gone, and returns the create -> Running times of all but
// the first, printing where the time went (the watches' timeline and the
// handler's stages) over the counted ones.
func localSingle(ctx context.Context, o options) (_ []time.Duration, err error) {
	reg := prometheus.NewRegistry()
	c, err := startLocal(ctx, o, reg)
	if err != nil {
		return nil, err
	}
	defer func() {
		if derr := c.Stop(context.Background()); derr != nil && err == nil {
			err = derr
		}
	}()
	var (
		out       []time.Duration
		timelines []*benchkit.Timeline
		before    benchkit.Stages
	)
	for i := range o.single + 1 {
		if i == 1 {
			if before, err = benchkit.GatherStages(reg); err != nil {
				return nil, err
			}
		}
		lat, tl, err := benchkit.CreateAndWait(ctx, c.Client, benchkit.Creation{
			Namespace: namespace, N: 1, Who: "virt-local",
			VMI: func(int) *virtv1.VirtualMachineInstance {
				return benchkit.GuestVMI(namespace, fmt.Sprintf("single-%d", i), c.GuestImage, o.memMiB, "density")
			},
		})
		if err != nil {
			return nil, err
		}
		if err := c.Client.DeleteAllOf(ctx, &virtv1.VirtualMachineInstance{}, client.InNamespace(namespace)); err != nil {
			return nil, err
		}
		if err := benchkit.WaitNone(ctx, c.Client, namespace); err != nil {
			return nil, err
		}
		if i > 0 {
			out = append(out, time.Duration(lat[0]*float64(time.Second)))
			timelines = append(timelines, tl)
		}
	}
	after, err := benchkit.GatherStages(reg)
	if err != nil {
		return nil, err
	}
	fmt.Printf("virtkit on virt-local, one VMI at a time: create -> Running %s over %d runs\n", benchkit.SpreadOf(out), len(out))
	printTimeline(timelines)
	printStages(after.Sub(before))
	return out, nil
}
