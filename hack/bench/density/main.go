// Command density is `make bench-density`: KubeVirt's density test on
// virt-local, with its floor measured in the same run.
//
// It starts N minimal guests twice, one every -interval (100 ms, as
// KubeVirt's test does with 100 VMIs):
//
//  1. plain: the test guest (same memory, 1 vCPU, software emulation,
//     booting from a qcow2 overlay of the same disk) defined and started
//     in one private libvirtd; the clock runs from the define call to
//     libvirt reporting the domain running;
//  2. virtkit: VMIs on a fresh virt-local (the test guest as a
//     containerDisk from the local registry, masquerade on the pod
//     network); the clock runs from the create call to the VMI's phase
//     Running seen through a watch.
//
// For the virtkit run it reports creation-to-Running p50/p95/max, each
// component's requests to the apiserver by verb and resource (counted in
// the client, kubevirt_rest_client_requests_total), each component's CPU
// seconds (a CPU profile labelled per component: virt-local runs them all
// in one process), the process's peak memory, and per-VM overhead (launcher
// and libvirtd resident memory). It draws the creation-to-Running
// distributions of both runs into a PNG.
//
// Writes per VMI counts what KubeVirt's published figure counts: PATCH
// and UPDATE requests on VMIs and pods by virtkit's components, divided by
// N, counting those that wrote (2xx, not a 409 conflict); the breakdown
// also shows creates, events and failed attempts. With -max-writes it
// fails when writes per VMI exceed that.
//
// It ends with one machine-readable line:
//
//	vmis=<n> writes_per_vmi=<number> p50_s=<number> p95_s=<number> p95_ratio_to_plain=<number>
//
// With -single R it starts one guest at a time instead, R times on each
// side after a warm-up start each, and ends with
//
//	single_runs=<R> p50_s=<number> min_s=<number> max_s=<number> plain_p50_s=<number> ratio_to_plain=<number>
//
// the ratio being of the medians.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/virtkit/virtkit/controllers/handler"
	"github.com/virtkit/virtkit/hack/bench/internal/benchkit"
)

type options struct {
	n           int
	interval    time.Duration
	memMiB      uint
	repo        string
	plot        string
	maxWrites   float64
	timeout     time.Duration
	keepDataDir bool
	verbose     bool
	// single, when set, replaces n: that many one-guest starts on each
	// side, one after the other, after a warm-up (runSingle).
	single int
}

func main() {
	var o options
	flag.IntVar(&o.n, "n", 20, "guests per run (this 2-core machine holds 20 booting test guests under software emulation)")
	flag.DurationVar(&o.interval, "interval", 100*time.Millisecond, "pause between two creations")
	flag.UintVar(&o.memMiB, "memory", 128, "guest memory in MiB")
	flag.StringVar(&o.repo, "repo", "../..", "checkout root (_output holds the binaries and the test guest); the default fits a run from hack/bench")
	flag.StringVar(&o.plot, "plot", "docs/performance/density.png", "PNG of the creation-to-Running distributions; empty: none")
	flag.Float64Var(&o.maxWrites, "max-writes", 0, "fail when writes per VMI exceed this; 0: no limit")
	flag.DurationVar(&o.timeout, "timeout", 15*time.Minute, "limit for the whole benchmark")
	flag.BoolVar(&o.keepDataDir, "keep", false, "keep virt-local's data directory (its logs) after the run")
	flag.BoolVar(&o.verbose, "v", false, "the components' logs (controllers, handler) on stderr")
	flag.IntVar(&o.single, "single", 0, "instead of -n: start one guest at a time this many times on each side, after a warm-up start each, and compare the medians")
	flag.Parse()
	if o.verbose {
		ctrllog.SetLogger(benchkit.ProgressLogger(true))
	} else {
		ctrllog.SetLogger(logr.Discard())
	}
	if o.single > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
		defer cancel()
		if _, err := runSingle(ctx, o); err != nil {
			fmt.Fprintln(os.Stderr, "bench-density:", err)
			os.Exit(1)
		}
		return
	}
	if _, err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench-density:", err)
		os.Exit(1)
	}
}

// summary is the machine-readable line's content.
type summary struct {
	vmis                   int
	writesPerVMI           float64
	p50, p95, ratioToPlain float64
	// starts is how many starts the handlers reported Running for
	// (handler.StageReport observed): one per VMI.
	starts uint64
}

func (s summary) String() string {
	return fmt.Sprintf("vmis=%d writes_per_vmi=%.2f p50_s=%.3f p95_s=%.3f p95_ratio_to_plain=%.2f",
		s.vmis, s.writesPerVMI, s.p50, s.p95, s.ratioToPlain)
}

func run(o options) (summary, error) {
	if o.n < 1 {
		return summary{}, fmt.Errorf("-n %d: at least one guest", o.n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	if err := o.absRepo(); err != nil {
		return summary{}, err
	}
	root := o.repo
	host, _ := os.Hostname()
	fmt.Printf("machine: %s, %d guests per run, one every %s, %d MiB each, software emulation\n", host, o.n, o.interval, o.memMiB)

	plain, err := runPlain(ctx, o)
	if err != nil {
		return summary{}, fmt.Errorf("plain libvirt run: %w", err)
	}
	fmt.Printf("plain libvirt: define -> running p50 %.3f s, p95 %.3f s, max %.3f s\n",
		benchkit.Percentile(plain, 50), benchkit.Percentile(plain, 95), benchkit.Percentile(plain, 100))

	res, err := runLocal(ctx, o)
	if err != nil {
		return summary{}, fmt.Errorf("virt-local run: %w", err)
	}
	res.print(o.n)
	p95, plainP95 := benchkit.Percentile(res.latencies, 95), benchkit.Percentile(plain, 95)
	if o.plot != "" {
		path := o.plot
		if !filepath.IsAbs(path) {
			path = filepath.Join(root, path)
		}
		if err := plotLatencies(path, o.n, res.latencies, plain); err != nil {
			return summary{}, err
		}
		fmt.Println("plot:", o.plot)
	}
	sum := summary{vmis: len(res.latencies), writesPerVMI: res.writesPerVMI(o.n),
		p50: benchkit.Percentile(res.latencies, 50), p95: p95, ratioToPlain: p95 / plainP95,
		starts: res.stages[handler.StageReport].Count}
	fmt.Println(sum)
	if o.maxWrites > 0 && sum.writesPerVMI > o.maxWrites {
		return sum, fmt.Errorf("writes per VMI %.2f exceed the goal of %.2f", sum.writesPerVMI, o.maxWrites)
	}
	return sum, nil
}

// absRepo makes o.repo absolute.
func (o *options) absRepo() error {
	root, err := filepath.Abs(o.repo)
	o.repo = root
	return err
}
