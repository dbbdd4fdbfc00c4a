package vmi

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	virtv1 "kubevirt.io/api/core/v1"
)

// DefaultSchedulingGrace is how long a new launcher pod may stay unbound
// before its VMI's status says Scheduling (WithSchedulingGrace). A pod the
// scheduler binds within it takes the VMI from Pending to Scheduled in one
// status write, every transition stamped, instead of one write for
// Scheduling and another for Scheduled.
const DefaultSchedulingGrace = 2 * time.Second

// HoldScheduling returns how much longer the write of next, the status
// NextStatus gave for a VMI whose status is now old, is held back: a
// write whose only news is that the VMI moved from Pending to Scheduling,
// while its launcher pod, created less than grace ago (by the apiserver's
// clock, in whole seconds; at most grace, whatever the clocks' skew), is
// not bound yet. Zero means write now: no grace, another phase, a pod
// bound, deleted or old enough, or a condition to show (the pod cannot be
// scheduled, a failed create is over).
func HoldScheduling(old, next *virtv1.VirtualMachineInstanceStatus, pod *corev1.Pod, grace time.Duration, now time.Time) time.Duration {
	if grace <= 0 || pod == nil || pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil ||
		next.Phase != virtv1.Scheduling || (old.Phase != "" && old.Phase != virtv1.Pending) ||
		!equality.Semantic.DeepEqual(old.Conditions, next.Conditions) {
		return 0
	}
	left := grace - now.Sub(pod.CreationTimestamp.Time)
	switch {
	case left < 0:
		return 0
	case left > grace: // the apiserver's clock runs ahead of ours
		return grace
	}
	return left
}
