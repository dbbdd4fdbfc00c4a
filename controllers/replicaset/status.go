package replicaset

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/controllers/conditions"
)

// Event and condition reasons, KubeVirt's.
const (
	ReasonSuccessfulCreate = "SuccessfulCreate"
	ReasonFailedCreate     = "FailedCreate"
	ReasonSuccessfulDelete = "SuccessfulDelete"
	ReasonFailedDelete     = "FailedDelete"
	ReasonPaused           = "SuccessfulPaused"
	ReasonResumed          = "SuccessfulResumed"
)

// ScaleError is why a reconcile could not create or delete VMIs: Reason is
// ReasonFailedCreate or ReasonFailedDelete. A Terminal one (an invalid
// template or selector) is not retried: only a change of the replica set
// helps.
type ScaleError struct {
	Reason   string
	Err      error
	Terminal bool
}

func (e *ScaleError) Error() string { return e.Err.Error() }
func (e *ScaleError) Unwrap() error { return e.Err }

// NextStatus is rs's status after a reconcile that found p and failed with
// scaleErr (nil: it did not fail), as KubeVirt writes it: the counts of p,
// the selector in its canonical string form (for the scale subresource),
// ReplicaFailure while scaling fails, ReplicaPaused while spec.paused is
// set. Conditions keep their transition time while they hold (package
// conditions); now stamps new ones.
func NextStatus(rs *virtv1.VirtualMachineInstanceReplicaSet, selector string, p Plan, scaleErr *ScaleError, now metav1.Time) virtv1.VirtualMachineInstanceReplicaSetStatus {
	st := *rs.Status.DeepCopy()
	st.Replicas, st.ReadyReplicas, st.LabelSelector = p.Replicas, p.ReadyReplicas, selector
	kind := conditions.ReplicaSet()
	if rs.Spec.Paused {
		kind.Set(&st.Conditions, virtv1.VirtualMachineInstanceReplicaSetCondition{Type: virtv1.VirtualMachineInstanceReplicaSetReplicaPaused,
			Status: corev1.ConditionTrue, Reason: "Paused", Message: "Controller got paused"}, now)
	} else {
		kind.Remove(&st.Conditions, virtv1.VirtualMachineInstanceReplicaSetReplicaPaused)
	}
	if scaleErr != nil {
		kind.Set(&st.Conditions, virtv1.VirtualMachineInstanceReplicaSetCondition{Type: virtv1.VirtualMachineInstanceReplicaSetReplicaFailure,
			Status: corev1.ConditionTrue, Reason: scaleErr.Reason, Message: scaleErr.Error()}, now)
	} else {
		kind.Remove(&st.Conditions, virtv1.VirtualMachineInstanceReplicaSetReplicaFailure)
	}
	return st
}
