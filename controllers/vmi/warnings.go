package vmi

import (
	corev1 "k8s.io/api/core/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/controllers/conditions"
)

// Warning is a Warning event a status change calls for: a failure the
// VMI's owner must act on.
type Warning struct {
	Reason, Message string
}

// StatusWarnings are the Warning events the controller records on vmi
// when it writes next as its status, one per failure next reports that
// vmi's status did not (FailedCreate has its own event, recorded at the
// failed create):
//
//   - a launcher pod that cannot get an image (the Synchronized condition
//     turning to ErrImagePull or ImagePullBackOff; once per episode, not at
//     each back-off of the kubelet);
//   - a launcher pod that cannot be scheduled (PodScheduled turning False,
//     with the scheduler's reason and message: a missing claim, no node
//     with the resources...);
//   - the VMI failing (phase Failed, with status.reason and the Ready
//     condition's message).
func StatusWarnings(vmi *virtv1.VirtualMachineInstance, next virtv1.VirtualMachineInstanceStatus) []Warning {
	var out []Warning
	old := &vmi.Status
	if c := conditions.VMI().Find(next.Conditions, virtv1.VirtualMachineInstanceSynchronized); c != nil && c.Status == corev1.ConditionFalse && imagePull(c.Reason) {
		if o := conditions.VMI().Find(old.Conditions, virtv1.VirtualMachineInstanceSynchronized); o == nil || o.Status != corev1.ConditionFalse || !imagePull(o.Reason) {
			out = append(out, Warning{Reason: c.Reason, Message: c.Message})
		}
	}
	if c := conditions.VMI().Find(next.Conditions, PodScheduled); c != nil && c.Status == corev1.ConditionFalse {
		if o := conditions.VMI().Find(old.Conditions, PodScheduled); o == nil || o.Status != c.Status || o.Reason != c.Reason || o.Message != c.Message {
			reason := c.Reason
			if reason == "" {
				reason = corev1.PodReasonUnschedulable
			}
			out = append(out, Warning{Reason: reason, Message: "the launcher pod cannot be scheduled: " + c.Message})
		}
	}
	if next.Phase == virtv1.Failed && old.Phase != virtv1.Failed {
		w := Warning{Reason: next.Reason, Message: "the VirtualMachineInstance failed"}
		if w.Reason == "" {
			w.Reason = string(virtv1.Failed)
		}
		if c := conditions.VMI().Find(next.Conditions, virtv1.VirtualMachineInstanceReady); c != nil && c.Message != "" {
			w.Message += ": " + c.Message
		}
		out = append(out, w)
	}
	return out
}

func imagePull(reason string) bool {
	return reason == ReasonErrImagePull || reason == ReasonImagePullBackOff
}

// warn records the Warning events of writing next over vmi's status.
func (r *Reconciler) warn(vmi *virtv1.VirtualMachineInstance, next virtv1.VirtualMachineInstanceStatus) {
	for _, w := range StatusWarnings(vmi, next) {
		r.recorder.Eventf(vmi, corev1.EventTypeWarning, w.Reason, "%s", w.Message)
	}
}
