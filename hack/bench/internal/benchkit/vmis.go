package benchkit

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Creation is a batch of VMIs a benchmark creates and waits for.
type Creation struct {
	// Namespace holds them, and nothing else the benchmark watches.
	Namespace string
	// N VMIs, one every Interval, each as VMI(i) makes it.
	N        int
	Interval time.Duration
	VMI      func(i int) *virtv1.VirtualMachineInstance
	// Who prefixes the progress lines ("virt-local").
	Who string
}

// Stage names of the Timeline CreateAndWait fills, besides "vmi PHASE".
const (
	StageCreated    = "created"
	StagePodCreated = "pod created"
	StagePodBound   = "pod bound"
	StagePodRunning = "pod Running"
	StagePodReady   = "pod Ready"
)

// StageVMI is the stage of a VMI seen in phase ph.
func StageVMI(ph virtv1.VirtualMachineInstancePhase) string { return "vmi " + string(ph) }

// CreateAndWait creates c's VMIs, waits until all run, and returns each
// one's create -> Running seconds and the timeline of every VMI: when
// each stage was first seen through watches of the VMIs and their pods.
func CreateAndWait(ctx context.Context, cl client.WithWatch, c Creation) ([]float64, *Timeline, error) {
	vmis, err := cl.Watch(ctx, &virtv1.VirtualMachineInstanceList{}, client.InNamespace(c.Namespace))
	if err != nil {
		return nil, nil, err
	}
	defer vmis.Stop()
	pods, err := cl.Watch(ctx, &corev1.PodList{}, client.InNamespace(c.Namespace))
	if err != nil {
		return nil, nil, err
	}
	defer pods.Stop()
	tl := NewTimeline()
	running := StageVMI(virtv1.Running)
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
						tl.See(vmi.Name, StageVMI(ph))
					}
				}
				if tl.Count(running) == c.N {
					return
				}
			case ev, ok := <-pods.ResultChan():
				if !ok {
					return
				}
				if pod, isPod := ev.Object.(*corev1.Pod); isPod && ev.Type != watch.Deleted {
					seePod(tl, pod)
				}
			}
		}
	}()
	fmt.Printf("%s: creating %d VMIs, one every %s\n", c.Who, c.N, c.Interval)
	// Each create is its own call, started on time whatever the ones
	// before take: a steady rate, as from many clients.
	var wg sync.WaitGroup
	errs := make(chan error, c.N)
	next := time.Now()
	for i := range c.N {
		vmi := c.VMI(i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.Now()
			if err := cl.Create(ctx, vmi); err != nil {
				errs <- fmt.Errorf("creating VMI %s: %w", vmi.Name, err)
				return
			}
			tl.At(vmi.Name, StageCreated, t)
		}()
		next = next.Add(c.Interval)
		time.Sleep(time.Until(next))
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, nil, err
	}
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return tl.Since(StageCreated, running), tl, nil
		case <-tick.C:
			fmt.Printf("%s: %d of %d VMIs Running\n", c.Who, tl.Count(running), c.N)
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("waiting for %d VMIs to run (%d do): %w", c.N, tl.Count(running), ctx.Err())
		}
	}
}

// seePod records a launcher pod's stages under its VMI's name.
func seePod(tl *Timeline, pod *corev1.Pod) {
	name := ""
	for _, ref := range pod.OwnerReferences {
		if ref.Kind == "VirtualMachineInstance" {
			name = ref.Name
		}
	}
	tl.See(name, StagePodCreated)
	if pod.Spec.NodeName != "" {
		tl.See(name, StagePodBound)
	}
	if pod.Status.Phase == corev1.PodRunning {
		tl.See(name, StagePodRunning)
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			tl.See(name, StagePodReady)
		}
	}
}

// WaitNone waits until namespace holds no VMI and no pod.
func WaitNone(ctx context.Context, cl client.Client, namespace string) error {
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
