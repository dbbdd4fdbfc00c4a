// Command scale is `make bench-scale`: the control plane's cost as the
// number of VMIs grows past what this machine can boot.
//
// For each N of -n (default 100, 300 and 1,000) it starts a fresh
// virt-local with -nodes hollow nodes (local/hollow: launcher pods with
// fakes of libvirt, the pod network and storage, so that the apiserver,
// the controllers, virt-api and the handlers do their real work while
// nothing boots), creates N VMIs at -rate per second, waits until all
// are Running, and reports:
//
//   - creation-to-Running p50, p95 and max, and the median time to each
//     stage (pod created, bound, Running, Ready; VMI Scheduled, Running);
//   - requests to the apiserver per VMI by component, verb, resource and
//     code (counted in each component's client), writes per VMI as
//     KubeVirt counts them, and the apiserver's request rate
//     (apiserver_request_total over the run);
//   - CPU seconds per component: virt-local's components from a CPU
//     profile labelled per component (they run in this process), the
//     control plane's processes from /proc;
//   - memory: each process's resident memory grown per VMI (this process,
//     after a garbage collection, holds every virtkit component and the
//     hollow nodes; kube-apiserver and etcd are processes of their own),
//     and each process's peak.
//
// Then it deletes the VMIs, waits until they and their pods are gone, and
// brings the cluster down. With more than one N it reports how each
// component's CPU per VMI grows from the smallest N to the largest, and
// draws the creation-to-Running distributions into a PNG.
//
// It ends with one machine-readable line, for the largest N:
//
//	scale_vmis=<n> p95_s=<n> cpu_ms_per_vmi=<n> rss_kib_per_vmi=<n> growth_cpu=<n>
//
// cpu_ms_per_vmi is virtkit's components' CPU (virt-api, virt-controller,
// the handlers, the hollow nodes' node stand-ins and launchers) per VMI;
// rss_kib_per_vmi this process's resident memory grown per VMI, a bound on
// each virtkit component's; growth_cpu the largest growth of one virtkit
// component's CPU per VMI from the smallest N to the largest (1 is flat).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/virtkit/virtkit/hack/bench/internal/benchkit"
)

type options struct {
	sizes       []int
	nodes       int
	rate        float64
	repo        string
	plot        string
	maxWrites   float64
	timeout     time.Duration
	keepDataDir bool
	verbose     bool
	profile     string
}

func main() {
	var o options
	var sizes string
	flag.StringVar(&sizes, "n", "100,300,1000", "VMIs per run, comma-separated: one fresh cluster each")
	flag.IntVar(&o.nodes, "nodes", 10, "hollow nodes")
	flag.Float64Var(&o.rate, "rate", 10, "VMIs created per second")
	flag.StringVar(&o.repo, "repo", "../..", "checkout root (_output holds the binaries); the default fits a run from hack/bench")
	flag.StringVar(&o.plot, "plot", "docs/performance/scale.png", "PNG of the creation-to-Running distributions, relative to -repo; empty: none")
	flag.Float64Var(&o.maxWrites, "max-writes", 0, "fail when writes per VMI exceed this in any run; 0: no limit")
	flag.DurationVar(&o.timeout, "timeout", 90*time.Minute, "limit for the whole benchmark")
	flag.BoolVar(&o.keepDataDir, "keep", false, "keep virt-local's data directories (their logs) after the runs")
	flag.BoolVar(&o.verbose, "v", false, "the components' logs on stderr")
	flag.StringVar(&o.profile, "profile", "", "write each run's CPU profile of this process to PREFIX-N.pprof (read it with go tool pprof -tagfocus component=virt-controller)")
	flag.Parse()
	var err error
	if o.sizes, err = parseSizes(sizes); err != nil {
		fmt.Fprintln(os.Stderr, "bench-scale: -n:", err)
		os.Exit(2)
	}
	if o.verbose {
		ctrllog.SetLogger(benchkit.ProgressLogger(true))
	} else {
		ctrllog.SetLogger(logr.Discard())
	}
	if _, err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench-scale:", err)
		os.Exit(1)
	}
}

// parseSizes reads "100,300,1000": positive, ascending.
func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q: want positive numbers, comma-separated", s)
		}
		if len(out) > 0 && n <= out[len(out)-1] {
			return nil, fmt.Errorf("%q: want them ascending", s)
		}
		out = append(out, n)
	}
	return out, nil
}

func run(o options) (summary, error) {
	if o.nodes < 1 || o.rate <= 0 {
		return summary{}, fmt.Errorf("-nodes %d -rate %g: want at least one node and a positive rate", o.nodes, o.rate)
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	root, err := filepath.Abs(o.repo)
	if err != nil {
		return summary{}, err
	}
	o.repo = root
	host, _ := os.Hostname()
	fmt.Printf("machine: %s; %d hollow nodes; VMIs created %g per second; runs of %v VMIs, a fresh cluster each\n", host, o.nodes, o.rate, o.sizes)
	var results []*result
	for _, n := range o.sizes {
		r, err := runOnce(ctx, o, n)
		if err != nil {
			return summary{}, fmt.Errorf("run of %d VMIs: %w", n, err)
		}
		r.print()
		results = append(results, r)
		if o.maxWrites > 0 && r.writesPerVMI() > o.maxWrites {
			return summary{}, fmt.Errorf("run of %d VMIs: writes per VMI %.2f exceed the goal of %.2f", n, r.writesPerVMI(), o.maxWrites)
		}
	}
	sum := summarize(results)
	if len(results) > 1 {
		printGrowth(results)
	}
	if o.plot != "" {
		path := o.plot
		if !filepath.IsAbs(path) {
			path = filepath.Join(root, path)
		}
		if err := plotLatencies(path, o, results); err != nil {
			return sum, err
		}
		fmt.Println("plot:", o.plot)
	}
	fmt.Println(sum)
	return sum, nil
}
