package main

import (
	"fmt"
	"math"

	"github.com/virtkit/virtkit/hack/bench/internal/benchkit"
	"github.com/virtkit/virtkit/local/cluster"
)

// daemons are virtkit's components that run as daemons on a cluster:
// growth_cpu is theirs.
var daemons = []string{cluster.ComponentAPI, cluster.ComponentController, cluster.ComponentHandler}

// virtkit are the components cpu_ms_per_vmi sums: the daemons and what a
// hollow node runs in their stead of a kubelet and the launchers.
var virtkit = append(append([]string(nil), daemons...), cluster.ComponentNode, cluster.ComponentHollowLauncher)

func (r *result) writesPerVMI() float64 { return r.requests.Writes() / float64(r.n) }

// cpuPerVMI is the CPU milliseconds per VMI of the components named.
func (r *result) cpuPerVMI(components ...string) float64 {
	var s float64
	for _, c := range components {
		s += r.cpu[c]
	}
	return s * 1000 / float64(r.n)
}

func (r *result) print() {
	n := float64(r.n)
	fmt.Printf("\n%d VMIs: create -> Running p50 %.3f s, p95 %.3f s, max %.3f s (all Running %.1f s after the first create)\n",
		r.n, benchkit.Percentile(r.latencies, 50), benchkit.Percentile(r.latencies, 95), benchkit.Percentile(r.latencies, 100), r.wall.Seconds())
	fmt.Println("where the time goes, seconds from the create call to the first sight of (median, p95):")
	for _, stage := range r.timeline.Stages() {
		if stage != benchkit.StageCreated {
			since := r.timeline.Since(benchkit.StageCreated, stage)
			fmt.Printf("  %-24s %6.3f s %6.3f s\n", stage, benchkit.Percentile(since, 50), benchkit.Percentile(since, 95))
		}
	}
	fmt.Printf("requests to the apiserver per VMI (component, verb, resource, HTTP code); writes per VMI %.2f:\n", r.writesPerVMI())
	for _, comp := range benchkit.SortedKeys(r.requests) {
		for _, k := range benchkit.SortedKeys(r.requests[comp]) {
			fmt.Printf("  %-18s %-44s %6.2f\n", comp, k, r.requests[comp][k]/n)
		}
	}
	fmt.Printf("the apiserver served %.0f requests, %.1f per second, %.1f per VMI\n", r.apiRequests, r.apiRequests/r.wall.Seconds(), r.apiRequests/n)
	fmt.Println("CPU by component: seconds, and milliseconds per VMI:")
	for _, comp := range benchkit.SortedKeys(r.cpu) {
		fmt.Printf("  %-70s %7.2f s %7.1f ms\n", comp, r.cpu[comp], r.cpu[comp]*1000/n)
	}
	fmt.Println("memory by process: resident growth per VMI, and peak:")
	for _, p := range benchkit.SortedKeys(r.peakKiB) {
		fmt.Printf("  %-28s %8.1f KiB per VMI   peak %7.1f MiB\n", p, r.rssGrowthKiB[p]/n, r.peakKiB[p]/1024)
	}
}

// growth is how a's figure per VMI grows from the first run to the last.
func growth(first, last *result, comp string) float64 {
	a, b := first.cpuPerVMI(comp), last.cpuPerVMI(comp)
	if a == 0 {
		return math.NaN()
	}
	return b / a
}

func printGrowth(rs []*result) {
	first, last := rs[0], rs[len(rs)-1]
	fmt.Printf("\nhow each figure grows with N (per VMI, %d VMIs -> %d):\n", first.n, last.n)
	fmt.Printf("  %-34s", "")
	for _, r := range rs {
		fmt.Printf(" %9s", fmt.Sprintf("N=%d", r.n))
	}
	fmt.Printf(" %8s\n", "growth")
	row := func(name string, f func(*result) float64) {
		fmt.Printf("  %-34s", name)
		for _, r := range rs {
			fmt.Printf(" %9.2f", f(r))
		}
		if a := f(first); a > 0 {
			fmt.Printf(" %8.2f\n", f(last)/a)
		} else {
			fmt.Printf(" %8s\n", "-")
		}
	}
	row("p95 create->Running s", func(r *result) float64 { return benchkit.Percentile(r.latencies, 95) })
	row("writes", (*result).writesPerVMI)
	row("apiserver requests", func(r *result) float64 { return r.apiRequests / float64(r.n) })
	for _, comp := range virtkit {
		row(comp+" CPU ms", func(r *result) float64 { return r.cpuPerVMI(comp) })
	}
	for _, p := range append([]string{self}, controlPlane[:2]...) {
		row(p+" KiB", func(r *result) float64 { return r.rssGrowthKiB[p] / float64(r.n) })
	}
}

// summary is the closing line's content.
type summary struct {
	vmis               int
	p95, cpuMs, rssKiB float64
	growthCPU          float64
}

func (s summary) String() string {
	return fmt.Sprintf("scale_vmis=%d p95_s=%.3f cpu_ms_per_vmi=%.1f rss_kib_per_vmi=%.1f growth_cpu=%.2f",
		s.vmis, s.p95, s.cpuMs, s.rssKiB, s.growthCPU)
}

// summarize is the closing line of the last (largest) run, with the
// daemons' largest CPU growth from the first run (1 with one run).
func summarize(rs []*result) summary {
	first, last := rs[0], rs[len(rs)-1]
	s := summary{vmis: last.n, p95: benchkit.Percentile(last.latencies, 95), cpuMs: last.cpuPerVMI(virtkit...),
		rssKiB: last.rssGrowthKiB[self] / float64(last.n), growthCPU: 1}
	if len(rs) > 1 {
		s.growthCPU = 0
		for _, comp := range daemons {
			if g := growth(first, last, comp); g > s.growthCPU {
				s.growthCPU = g
			}
		}
	}
	return s
}
