package vmi

import (
	"errors"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
)

func createdAt(t time.Time) podOpt {
	return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(t) }
}

// Only the write that says Scheduling and nothing else waits, and only
// while the new pod is unbound and within the grace.
func TestHoldScheduling(t *testing.T) {
	const grace = 2 * time.Second
	for _, tc := range []struct {
		name  string
		vmi   *virtv1.VirtualMachineInstance
		pod   *corev1.Pod
		grace time.Duration
		now   time.Time
		want  time.Duration
	}{
		{"new pod, unbound: hold the rest of the grace", newVMI(), newPod(createdAt(t0)), grace, t0.Add(500 * time.Millisecond), 1500 * time.Millisecond},
		{"Pending before: hold too", newVMI(phase(virtv1.Pending)), newPod(createdAt(t0)), grace, t0, grace},
		{"the apiserver's clock ahead: at most the grace", newVMI(), newPod(createdAt(t0.Add(time.Minute))), grace, t0, grace},
		{"grace over: write Scheduling", newVMI(), newPod(createdAt(t0)), grace, t0.Add(grace + time.Millisecond), 0},
		{"no grace", newVMI(), newPod(createdAt(t0)), 0, t0, 0},
		{"bound: Scheduled, written now", newVMI(), newPod(createdAt(t0), onNode("n1")), grace, t0, 0},
		{"unschedulable: the condition shows now", newVMI(), newPod(createdAt(t0), unschedulable("0/1 nodes are available")), grace, t0, 0},
		{"pod deleted meanwhile", newVMI(), newPod(createdAt(t0), podDeleting()), grace, t0, 0},
		{"already Scheduling: nothing held", newVMI(phase(virtv1.Scheduling)), newPod(createdAt(t0)), grace, t0, 0},
		{"no pod", newVMI(), nil, grace, t0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := NextStatus(tc.vmi, tc.pod, nil, tc.now)
			if got := HoldScheduling(&tc.vmi.Status, &next, tc.pod, tc.grace, tc.now); got != tc.want {
				t.Errorf("HoldScheduling = %s, want %s (next phase %s)", got, tc.want, next.Phase)
			}
		})
	}
	// A failed create cleared by the pod's creation is news: written now.
	failed := newVMI()
	failed.Status = NextStatus(failed, nil, errors.New("quota exceeded"), t0)
	pod := newPod(createdAt(t0))
	next := NextStatus(failed, pod, nil, t0)
	if got := HoldScheduling(&failed.Status, &next, pod, grace, t0); got != 0 {
		t.Errorf("after a failed create: HoldScheduling = %s, want 0", got)
	}
	// The bind within the grace takes the VMI from Pending to Scheduled in
	// one write, each phase stamped.
	bound := NextStatus(newVMI(), newPod(createdAt(t0), onNode("n1")), nil, t0)
	var phases []virtv1.VirtualMachineInstancePhase
	for _, p := range bound.PhaseTransitionTimestamps {
		phases = append(phases, p.Phase)
	}
	if want := []virtv1.VirtualMachineInstancePhase{virtv1.Pending, virtv1.Scheduling, virtv1.Scheduled}; !slices.Equal(phases, want) {
		t.Errorf("one write from a bound pod: transitions %v, want %v", phases, want)
	}
}
