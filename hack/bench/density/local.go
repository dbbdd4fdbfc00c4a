package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/pprof/profile"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/hack/bench/internal/benchkit"
	"github.com/virtkit/virtkit/internal/localcluster"
	"github.com/virtkit/virtkit/local/cluster"
	"github.com/virtkit/virtkit/metrics"
)

// localResult is what the virt-local run measured.
type localResult struct {
	latencies []float64
	// requests: component -> "verb resource code" -> count.
	requests map[string]map[string]float64
	// cpu: component -> CPU seconds from the labelled profile.
	cpu         map[string]float64
	cpuTotal    float64 // the process's CPU seconds over the run
	peakRSSMiB  float64 // the process's peak resident memory
	launcherMiB float64 // mean launcher + libvirtd RSS per VM
	qemuMiB     float64 // mean QEMU RSS per VM
	wall        time.Duration
	timeline    *timeline
}

const namespace = "default"

// runLocal starts virt-local on a fresh data directory, creates o.n VMIs
// and measures them; virt-local is down again when it returns.
func runLocal(ctx context.Context, o options) (_ *localResult, err error) {
	reg := prometheus.NewRegistry()
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
	defer func() {
		if derr := c.Stop(context.Background()); derr != nil && err == nil {
			err = derr
		}
	}()
	image, cl := c.GuestImage, c.Client

	// Only what the creations cause counts: the counters as they are now
	// are subtracted at the end.
	before, err := gatherRequests(reg)
	if err != nil {
		return nil, err
	}
	var prof bytes.Buffer
	if err := pprof.StartCPUProfile(&prof); err != nil {
		return nil, err
	}
	cpu0 := processCPU()
	res := &localResult{}
	begin := time.Now()
	res.latencies, res.timeline, err = createAndWait(ctx, cl, o, image)
	res.wall = time.Since(begin)
	pprof.StopCPUProfile()
	res.cpuTotal = processCPU() - cpu0
	if err != nil {
		return nil, err
	}
	after, err := gatherRequests(reg)
	if err != nil {
		return nil, err
	}
	res.requests = subtract(after, before)
	if res.cpu, err = cpuByComponent(&prof); err != nil {
		return nil, err
	}
	res.launcherMiB, res.qemuMiB = perVMOverhead(o.n)
	res.peakRSSMiB = benchkit.ProcKiB(os.Getpid(), "status", "VmHWM:") / 1024

	// Delete them all and wait until they are gone, so that Down has
	// nothing left to stop.
	if err := cl.DeleteAllOf(ctx, &virtv1.VirtualMachineInstance{}, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	return res, waitNone(ctx, cl)
}

// createAndWait creates o.n VMIs one every o.interval, waits until all
// run, and returns each one's create -> Running seconds and the timeline
// of every VMI (when each stage was first seen through the watches).
func createAndWait(ctx context.Context, cl client.WithWatch, o options, image string) ([]float64, *timeline, error) {
	vmis, err := cl.Watch(ctx, &virtv1.VirtualMachineInstanceList{}, client.InNamespace(namespace))
	if err != nil {
		return nil, nil, err
	}
	defer vmis.Stop()
	pods, err := cl.Watch(ctx, &corev1.PodList{}, client.InNamespace(namespace))
	if err != nil {
		return nil, nil, err
	}
	defer pods.Stop()
	tl := newTimeline()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case ev, ok := <-vmis.ResultChan():
				if !ok {
					return
				}
				if vmi, isVMI := ev.Object.(*virtv1.VirtualMachineInstance); isVMI && ev.Type != watch.Deleted {
					if ph := vmi.Status.Phase; ph != "" && ph != virtv1.Pending {
						tl.see(vmi.Name, "vmi "+string(ph))
					}
				}
				if tl.count("vmi "+string(virtv1.Running)) == o.n {
					return
				}
			case ev, ok := <-pods.ResultChan():
				if !ok {
					return
				}
				if pod, isPod := ev.Object.(*corev1.Pod); isPod && ev.Type != watch.Deleted {
					name := ""
					for _, ref := range pod.OwnerReferences {
						if ref.Kind == "VirtualMachineInstance" {
							name = ref.Name
						}
					}
					tl.see(name, "pod created")
					if pod.Spec.NodeName != "" {
						tl.see(name, "pod bound")
					}
					if pod.Status.Phase == corev1.PodRunning {
						tl.see(name, "pod Running")
					}
					for _, c := range pod.Status.Conditions {
						if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
							tl.see(name, "pod Ready")
						}
					}
				}
			}
		}
	}()
	fmt.Printf("virt-local: creating %d VMIs\n", o.n)
	for i := range o.n {
		vmi := benchkit.GuestVMI(namespace, fmt.Sprintf("density-%d", i), image, o.memMiB, "density")
		t := time.Now()
		if err := cl.Create(ctx, vmi); err != nil {
			return nil, nil, fmt.Errorf("creating VMI %s: %w", vmi.Name, err)
		}
		tl.at(vmi.Name, "created", t)
		time.Sleep(o.interval)
	}
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return tl.since("created", "vmi "+string(virtv1.Running)), tl, nil
		case <-tick.C:
			fmt.Printf("virt-local: %d of %d VMIs Running\n", tl.count("vmi "+string(virtv1.Running)), o.n)
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("waiting for %d VMIs to run: %w", o.n, ctx.Err())
		}
	}
}

func waitNone(ctx context.Context, cl client.Client) error {
	for {
		var list virtv1.VirtualMachineInstanceList
		var pods corev1.PodList
		err := cl.List(ctx, &list, client.InNamespace(namespace))
		if err == nil {
			err = cl.List(ctx, &pods, client.InNamespace(namespace))
		}
		if err == nil && len(list.Items) == 0 && len(pods.Items) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the VMIs to go (%d VMIs, %d pods left): %w", len(list.Items), len(pods.Items), ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// gatherRequests reads kubevirt_rest_client_requests_total by component
// and "verb resource code".
func gatherRequests(g prometheus.Gatherer) (map[string]map[string]float64, error) {
	mfs, err := g.Gather()
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != metrics.ClientRequestsName {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := labels(m)
			if out[l["component"]] == nil {
				out[l["component"]] = map[string]float64{}
			}
			out[l["component"]][l["verb"]+" "+l["resource"]+" "+l["code"]] += m.GetCounter().GetValue()
		}
	}
	return out, nil
}

func labels(m *dto.Metric) map[string]string {
	l := map[string]string{}
	for _, p := range m.GetLabel() {
		l[p.GetName()] = p.GetValue()
	}
	return l
}

func subtract(after, before map[string]map[string]float64) map[string]map[string]float64 {
	out := map[string]map[string]float64{}
	for comp, m := range after {
		for k, v := range m {
			if d := v - before[comp][k]; d > 0 {
				if out[comp] == nil {
					out[comp] = map[string]float64{}
				}
				out[comp][k] = d
			}
		}
	}
	return out
}

// cpuByComponent sums a CPU profile's samples by their "component" label.
func cpuByComponent(prof *bytes.Buffer) (map[string]float64, error) {
	p, err := profile.Parse(prof)
	if err != nil {
		return nil, err
	}
	idx := -1
	for i, st := range p.SampleType {
		if st.Type == "cpu" {
			idx = i
		}
	}
	if idx < 0 {
		return nil, fmt.Errorf("the CPU profile has no cpu samples")
	}
	out := map[string]float64{}
	for _, s := range p.Sample {
		comp := "other (this benchmark, client-go's shared transports, the Go runtime)"
		if v := s.Label[cluster.ComponentLabel]; len(v) > 0 {
			comp = v[0]
		}
		out[comp] += float64(s.Value[idx]) / 1e9
	}
	return out, nil
}

// processCPU is this process's user + system CPU seconds so far.
func processCPU() float64 {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0
	}
	// Fields after the command (which may hold spaces) in parentheses.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	var utime, stime float64
	fmt.Sscan(f[11], &utime)
	fmt.Sscan(f[12], &stime)
	return (utime + stime) / 100 // USER_HZ
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
		percentile(r.latencies, 50), percentile(r.latencies, 95), percentile(r.latencies, 100), n, r.wall.Seconds())
	fmt.Println("where the time goes, median seconds from the create call to the first sight of:")
	for _, stage := range r.timeline.stages() {
		if stage != "created" {
			fmt.Printf("  %-24s %6.3f s\n", stage, percentile(r.timeline.since("created", stage), 50))
		}
	}
	fmt.Println("requests to the apiserver during the run, per VMI (component, verb, resource, HTTP code):")
	for _, comp := range sortedKeys(r.requests) {
		for _, k := range sortedKeys(r.requests[comp]) {
			fmt.Printf("  %-16s %-40s %6.2f\n", comp, k, r.requests[comp][k]/float64(n))
		}
	}
	fmt.Printf("CPU seconds during the run: process %.1f s; by component (labelled profile):\n", r.cpuTotal)
	for _, comp := range sortedKeys(r.cpu) {
		fmt.Printf("  %-16s %6.2f s\n", comp, r.cpu[comp])
	}
	fmt.Printf("peak memory of the virt-local process (all components): %.0f MiB\n", r.peakRSSMiB)
	fmt.Printf("per VM: launcher + libvirtd %.1f MiB RSS, QEMU %.1f MiB RSS\n", r.launcherMiB, r.qemuMiB)
}

// writesPerVMI counts what KubeVirt's figure counts, PATCH and UPDATE of
// VMIs and pods by the components, per VMI; only those that wrote (2xx):
// a 409 conflict changed nothing, and the breakdown shows it apart.
func (r *localResult) writesPerVMI(n int) float64 {
	var w float64
	for _, comp := range []string{cluster.ComponentController, cluster.ComponentHandler, cluster.ComponentAPI} {
		for k, v := range r.requests[comp] {
			f := strings.Fields(k) // verb, resource, code
			if len(f) != 3 {
				continue
			}
			base, _, _ := strings.Cut(f[1], "/")
			if (f[0] == "patch" || f[0] == "update") && (base == "virtualmachineinstances" || base == "pods") && strings.HasPrefix(f[2], "2") {
				w += v
			}
		}
	}
	return w / float64(n)
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
