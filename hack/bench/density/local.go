package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/hack/bench/internal/benchkit"
	"github.com/virtkit/virtkit/internal/localcluster"
)

// localResult is what the virt-local run measured.
type localResult struct {
	latencies []float64
	requests  benchkit.Requests
	stages    benchkit.Stages // the handler's start stages
	// cpu: component -> CPU seconds from the labelled profile.
	cpu         map[string]float64
	cpuTotal    float64 // the process's CPU seconds over the run
	peakRSSMiB  float64 // the process's peak resident memory
	launcherMiB float64 // mean launcher + libvirtd RSS per VM
	qemuMiB     float64 // mean QEMU RSS per VM
	wall        time.Duration
	timeline    *benchkit.Timeline
}

const namespace = "default"

// runLocal starts virt-local on a fresh data directory, creates o.n VMIs
// and measures them; virt-local is down again when it returns.
func runLocal(ctx context.Context, o options) (_ *localResult, err error) {
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
	image, cl := c.GuestImage, c.Client

	// Only what the creations cause counts: the counters as they are now
	// are subtracted at the end.
	before, err := benchkit.GatherRequests(reg)
	if err != nil {
		return nil, err
	}
	stagesBefore, err := benchkit.GatherStages(reg)
	if err != nil {
		return nil, err
	}
	var prof bytes.Buffer
	if err := pprof.StartCPUProfile(&prof); err != nil {
		return nil, err
	}
	cpu0 := benchkit.ProcessCPU()
	res := &localResult{}
	begin := time.Now()
	res.latencies, res.timeline, err = benchkit.CreateAndWait(ctx, cl, benchkit.Creation{
		Namespace: namespace, N: o.n, Interval: o.interval, Who: "virt-local",
		VMI: func(i int) *virtv1.VirtualMachineInstance {
			return benchkit.GuestVMI(namespace, fmt.Sprintf("density-%d", i), image, o.memMiB, "density")
		},
	})
	res.wall = time.Since(begin)
	pprof.StopCPUProfile()
	res.cpuTotal = benchkit.ProcessCPU() - cpu0
	if err != nil {
		return nil, err
	}
	after, err := benchkit.GatherRequests(reg)
	if err != nil {
		return nil, err
	}
	res.requests = after.Sub(before)
	stagesAfter, err := benchkit.GatherStages(reg)
	if err != nil {
		return nil, err
	}
	res.stages = stagesAfter.Sub(stagesBefore)
	if res.cpu, err = benchkit.CPUByComponent(&prof); err != nil {
		return nil, err
	}
	res.launcherMiB, res.qemuMiB = perVMOverhead(o.n)
	res.peakRSSMiB = benchkit.ProcKiB(os.Getpid(), "status", "VmHWM:") / 1024

	// Delete them all and wait until they are gone, so that Down has
	// nothing left to stop.
	if err := cl.DeleteAllOf(ctx, &virtv1.VirtualMachineInstance{}, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	return res, benchkit.WaitNone(ctx, cl, namespace)
}

// startLocal starts virt-local with one local node on a fresh data
// directory, its components counting into reg.
func startLocal(ctx context.Context, o options, reg *prometheus.Registry) (*localcluster.Cluster, error) {
	c, err := localcluster.Start(ctx, localcluster.Options{
		Repo: o.repo, DataPrefix: "vkd-local-", Keep: o.keepDataDir,
		Nodes:   []string{fmt.Sprintf("density-%d", os.Getpid())},
		Metrics: reg,
		Logger:  benchkit.ProgressLogger(o.verbose),
	})
	if err != nil {
		return nil, err
	}
	if o.keepDataDir {
		fmt.Println("virt-local data directory:", c.DataDir)
	}
	return c, nil
}

// perVMOverhead is the mean resident memory of the launchers and their
// libvirtds, and of QEMU, per VM.
func perVMOverhead(n int) (launcherMiB, qemuMiB float64) {
	var l, q float64
	for _, pid := range slices.Concat(benchkit.Processes("virt-launcher"), benchkit.Processes("libvirtd")) {
		if isOurs(pid) {
			l += benchkit.ProcKiB(pid, "status", "VmRSS:") / 1024
		}
	}
	for _, pid := range benchkit.Processes("qemu-system-x86_64") {
		if isOurs(pid) {
			q += benchkit.ProcKiB(pid, "status", "VmRSS:") / 1024
		}
	}
	return l / float64(n), q / float64(n)
}

// isOurs: a process in a launcher pod (its mount namespace differs from
// ours) rather than the plain run's or someone else's.
func isOurs(pid int) bool {
	self, _ := os.Readlink("/proc/self/ns/mnt")
	other, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", pid))
	return err == nil && other != self
}

func (r *localResult) print(n int) {
	fmt.Printf("virtkit on virt-local: create -> Running p50 %.3f s, p95 %.3f s, max %.3f s (all %d Running after %.1f s)\n",
		benchkit.Percentile(r.latencies, 50), benchkit.Percentile(r.latencies, 95), benchkit.Percentile(r.latencies, 100), n, r.wall.Seconds())
	printTimeline([]*benchkit.Timeline{r.timeline})
	printStages(r.stages)
	fmt.Println("requests to the apiserver during the run, per VMI (component, verb, resource, HTTP code):")
	for _, comp := range benchkit.SortedKeys(r.requests) {
		for _, k := range benchkit.SortedKeys(r.requests[comp]) {
			fmt.Printf("  %-16s %-40s %6.2f\n", comp, k, r.requests[comp][k]/float64(n))
		}
	}
	fmt.Printf("CPU seconds during the run: process %.1f s; by component (labelled profile):\n", r.cpuTotal)
	for _, comp := range benchkit.SortedKeys(r.cpu) {
		fmt.Printf("  %-16s %6.2f s\n", comp, r.cpu[comp])
	}
	fmt.Printf("peak memory of the virt-local process (all components): %.0f MiB\n", r.peakRSSMiB)
	fmt.Printf("per VM: launcher + libvirtd %.1f MiB RSS, QEMU %.1f MiB RSS\n", r.launcherMiB, r.qemuMiB)
}

// writesPerVMI is benchkit's Requests.Writes per VMI.
func (r *localResult) writesPerVMI(n int) float64 { return r.requests.Writes() / float64(n) }

// printTimeline prints each stage's median time from the create call over
// the VMIs of every timeline.
func printTimeline(tls []*benchkit.Timeline) {
	if len(tls) == 0 {
		return
	}
	fmt.Println("where the time goes, median seconds from the create call to the first sight of:")
	for _, stage := range tls[0].Stages() {
		if stage == benchkit.StageCreated {
			continue
		}
		var all []float64
		for _, tl := range tls {
			all = append(all, tl.Since(benchkit.StageCreated, stage)...)
		}
		fmt.Printf("  %-24s %6.3f s\n", stage, benchkit.Percentile(all, 50))
	}
}

// printStages prints the handler's start stages.
func printStages(st benchkit.Stages) {
	fmt.Println("the handler's part, each stage's median (from its histogram: good to the bucket, about 1.6x) and mean:")
	for _, stage := range st.Names() {
		h := st[stage]
		fmt.Printf("  %-24s %6.3f s  %6.3f s  (%d)\n", stage, h.Quantile(0.5), h.Mean(), h.Count)
	}
}
