package pool

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	poolv1 "kubevirt.io/api/pool/v1beta1"

	"github.com/virtkit/virtkit/controllers/conditions"
)

// Event and condition reasons, KubeVirt's.
const (
	ReasonSuccessfulCreate = "SuccessfulCreate"
	ReasonFailedCreate     = "FailedCreate"
	ReasonSuccessfulDelete = "SuccessfulDelete"
	ReasonFailedDelete     = "FailedDelete"
	ReasonSuccessfulUpdate = "SuccessfulUpdate"
	ReasonFailedUpdate     = "FailedUpdate"
	ReasonPaused           = "SuccessfulPaused"
	ReasonResumed          = "SuccessfulResume"

	// Reasons of the ReplicaFailure condition.
	ReasonFailedScaleOut        = "FailedScaleOut"
	ReasonFailedScaleIn         = "FailedScaleIn"
	ReasonFailedRevisionPruning = "FailedRevisionPruning"
)

// SyncError is why a reconcile failed, with the ReplicaFailure reason it
// reports. A Terminal one (an invalid selector or template) is not retried:
// only a change of the pool helps.
type SyncError struct {
	Reason   string
	Err      error
	Terminal bool
}

func (e *SyncError) Error() string { return e.Err.Error() }
func (e *SyncError) Unwrap() error { return e.Err }

// NextStatus is pool's status after a reconcile that found p and failed with
// syncErr (nil: it did not), as KubeVirt writes it: the counts of p, the
// selector as a string (for the scale subresource), ReplicaFailure while
// reconciling fails, ReplicaPaused while spec.paused is set.
func NextStatus(pool *poolv1.VirtualMachinePool, selector string, p Plan, syncErr *SyncError, now metav1.Time) poolv1.VirtualMachinePoolStatus {
	st := *pool.Status.DeepCopy()
	st.Replicas, st.ReadyReplicas, st.LabelSelector = p.Replicas, p.ReadyReplicas, selector
	k := conditions.Pool()
	if pool.Spec.Paused {
		k.Set(&st.Conditions, poolv1.VirtualMachinePoolCondition{Type: poolv1.VirtualMachinePoolReplicaPaused,
			Status: corev1.ConditionTrue, Reason: ReasonPaused, Message: "Pool controller is paused"}, now)
	} else {
		k.Remove(&st.Conditions, poolv1.VirtualMachinePoolReplicaPaused)
	}
	if syncErr != nil {
		k.Set(&st.Conditions, poolv1.VirtualMachinePoolCondition{Type: poolv1.VirtualMachinePoolReplicaFailure,
			Status: corev1.ConditionTrue, Reason: syncErr.Reason, Message: syncErr.Error()}, now)
	} else {
		k.Remove(&st.Conditions, poolv1.VirtualMachinePoolReplicaFailure)
	}
	return st
}
