package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/hack/bench/internal/benchkit"
	"github.com/virtkit/virtkit/internal/localcluster"
)

const namespace = "default"

// self names this process among the measured ones: virt-local's
// components and the hollow nodes.
const self = "virt-local (this process)"

// controlPlane are the control plane's processes, by command name.
var controlPlane = []string{"kube-apiserver", "etcd", "kube-scheduler", "kube-controller-manager"}

// result is what one run of n VMIs measured.
type result struct {
	n         int
	latencies []float64
	timeline  *benchkit.Timeline
	wall      time.Duration
	requests  benchkit.Requests
	// apiRequests is the apiserver's own count of the requests it served
	// during the run (apiserver_request_total), from everyone.
	apiRequests float64
	// cpu is CPU seconds by component: this process's by profile label,
	// the control plane's processes by name.
	cpu map[string]float64
	// rssGrowthKiB is each process's resident memory at the end minus at
	// the start (after a GC for this process); peakKiB its peak.
	rssGrowthKiB, peakKiB map[string]float64
}

// runOnce measures n VMIs on a fresh cluster of hollow nodes.
func runOnce(ctx context.Context, o options, n int) (_ *result, err error) {
	nodes := make([]string, o.nodes)
	for i := range nodes {
		nodes[i] = fmt.Sprintf("hollow-%d", i)
	}
	reg := prometheus.NewRegistry()
	c, err := localcluster.Start(ctx, localcluster.Options{
		Repo: o.repo, DataPrefix: "vks-", Keep: o.keepDataDir,
		HollowNodes: nodes, Metrics: reg, Logger: benchkit.ProgressLogger(o.verbose),
	})
	if err != nil {
		return nil, err
	}
	if o.keepDataDir {
		fmt.Println("virt-local data directory:", c.DataDir)
	}
	defer func() {
		if derr := c.Stop(context.Background()); derr != nil && err == nil {
			err = derr
		}
	}()
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		return nil, err
	}
	procs := map[string]int{self: os.Getpid()}
	for _, name := range controlPlane {
		for _, pid := range benchkit.Processes(name) {
			if strings.Contains(benchkit.Cmdline(pid), c.DataDir) {
				procs[name] = pid
			}
		}
	}

	// Only what the creations cause counts: counters as they are now are
	// subtracted at the end.
	reqs0, err := benchkit.GatherRequests(reg)
	if err != nil {
		return nil, err
	}
	api0, err := apiserverRequests(ctx, cs)
	if err != nil {
		return nil, err
	}
	rss0, cpu0 := map[string]float64{}, map[string]float64{}
	freeMemory()
	for name, pid := range procs {
		rss0[name], cpu0[name] = benchkit.ProcKiB(pid, "status", "VmRSS:"), benchkit.ProcCPU(pid)
	}
	var prof bytes.Buffer
	if err := pprof.StartCPUProfile(&prof); err != nil {
		return nil, err
	}
	r := &result{n: n, cpu: map[string]float64{}, rssGrowthKiB: map[string]float64{}, peakKiB: map[string]float64{}}
	begin := time.Now()
	r.latencies, r.timeline, err = benchkit.CreateAndWait(ctx, c.Client, benchkit.Creation{
		Namespace: namespace, N: n, Interval: time.Duration(float64(time.Second) / o.rate), Who: fmt.Sprintf("scale %d", n),
		VMI: func(i int) *virtv1.VirtualMachineInstance {
			return benchkit.GuestVMI(namespace, fmt.Sprintf("scale-%d", i), c.GuestImage, 128, "scale")
		},
	})
	r.wall = time.Since(begin)
	pprof.StopCPUProfile()
	if err != nil {
		return nil, err
	}
	reqs, err := benchkit.GatherRequests(reg)
	if err != nil {
		return nil, err
	}
	r.requests = reqs.Sub(reqs0)
	api, err := apiserverRequests(ctx, cs)
	if err != nil {
		return nil, err
	}
	r.apiRequests = api - api0
	if o.profile != "" {
		if err := os.WriteFile(fmt.Sprintf("%s-%d.pprof", o.profile, n), prof.Bytes(), 0o644); err != nil {
			return nil, err
		}
	}
	if r.cpu, err = benchkit.CPUByComponent(&prof); err != nil {
		return nil, err
	}
	freeMemory()
	for name, pid := range procs {
		if name != self {
			r.cpu[name] = benchkit.ProcCPU(pid) - cpu0[name]
		}
		r.rssGrowthKiB[name] = benchkit.ProcKiB(pid, "status", "VmRSS:") - rss0[name]
		r.peakKiB[name] = benchkit.ProcKiB(pid, "status", "VmHWM:")
	}

	// Delete them all and wait until they are gone, so that Down has
	// nothing left to stop.
	if err := c.Client.DeleteAllOf(ctx, &virtv1.VirtualMachineInstance{}, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	return r, benchkit.WaitNone(ctx, c.Client, namespace)
}

// freeMemory returns this process's free heap to the system, so that its
// resident memory is what it holds.
func freeMemory() {
	runtime.GC()
	debug.FreeOSMemory()
}

// apiserverRequests is the sum of apiserver_request_total, the requests
// the apiserver has served, read from its /metrics.
func apiserverRequests(ctx context.Context, cs kubernetes.Interface) (float64, error) {
	b, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, fmt.Errorf("the apiserver's /metrics: %w", err)
	}
	var sum float64
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			return 0, fmt.Errorf("the apiserver's /metrics: %q: %w", line, err)
		}
		sum += v
	}
	return sum, sc.Err()
}
