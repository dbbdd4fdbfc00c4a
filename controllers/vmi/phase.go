package vmi

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/controllers/conditions"
)

// SetPhase moves st to phase at t, stamping the transition once, as every
// writer of a VMI's phase (this controller, the handler, the node
// controller) does.
func SetPhase(st *virtv1.VirtualMachineInstanceStatus, phase virtv1.VirtualMachineInstancePhase, t metav1.Time) {
	if st.Phase == phase {
		return
	}
	st.Phase = phase
	st.PhaseTransitionTimestamps = append(st.PhaseTransitionTimestamps,
		virtv1.VirtualMachineInstancePhaseTransitionTimestamp{Phase: phase, PhaseTransitionTimestamp: t})
}

// Fail moves st to Failed at t with reason (status.reason) and a Ready
// condition False carrying reason and message.
func Fail(st *virtv1.VirtualMachineInstanceStatus, reason, message string, t metav1.Time) {
	SetPhase(st, virtv1.Failed, t)
	st.Reason = reason
	conditions.VMI().Set(&st.Conditions, virtv1.VirtualMachineInstanceCondition{Type: virtv1.VirtualMachineInstanceReady,
		Status: corev1.ConditionFalse, Reason: reason, Message: message, LastTransitionTime: t}, t)
}

// PodEnded reports whether a launcher pod has ended: the pod, or its
// compute container (restartPolicy Never: a terminated compute container
// does not come back).
func PodEnded(pod *corev1.Pod) bool {
	if pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
		return true
	}
	return computeTerminated(pod) != nil
}

// LauncherUp reports whether a launcher pod is up, as KubeVirt's
// IsPodReady says: not going away, its compute container running, every
// other container ready. The compute container's own readiness is not
// asked: with a readiness probe it is the guest's (computeProbes), which a
// migration target, for one, cannot have before the guest arrives.
func LauncherUp(pod *corev1.Pod) bool {
	if pod.DeletionTimestamp != nil || PodEnded(pod) {
		return false
	}
	compute := false
	for _, cs := range pod.Status.ContainerStatuses {
		switch {
		case cs.Name == ComputeContainer:
			compute = cs.State.Running != nil
		case !cs.Ready:
			return false
		}
	}
	return compute
}
