package clone

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clonev1 "kubevirt.io/api/clone/v1beta1"
)

// Reasons of the Progressing and Ready conditions, KubeVirt's.
const (
	conditionPending    = "Pending"
	conditionFailed     = "Failed"
	conditionProcessing = "Still processing"
	conditionReady      = "Ready"
)

// State is where a clone stands, for its conditions.
type State int

// The states a clone's conditions tell.
const (
	// Processing: the clone moves on.
	Processing State = iota
	// Pending: the clone waits for something outside it (its source).
	Pending
	// Failing: the clone failed.
	Failing
	// Done: the target VM is there.
	Done
)

// SetConditions writes the Progressing and Ready conditions of a clone in
// state s, as KubeVirt words them (why is the Ready reason of a pending or
// failing clone), at now. A condition whose status and reason stay keeps
// its transition time.
func SetConditions(st *clonev1.VirtualMachineCloneStatus, s State, why string, now metav1.Time) {
	progressing, ready := corev1.ConditionTrue, corev1.ConditionFalse
	pReason, rReason := conditionProcessing, conditionProcessing
	switch s {
	case Pending:
		progressing, pReason, rReason = corev1.ConditionFalse, conditionPending, why
	case Failing:
		progressing, pReason, rReason = corev1.ConditionFalse, conditionFailed, why
	case Done:
		progressing, ready, pReason, rReason = corev1.ConditionFalse, corev1.ConditionTrue, conditionReady, conditionReady
	}
	st.Conditions = setCondition(st.Conditions, clonev1.Condition{Type: clonev1.ConditionProgressing, Status: progressing, Reason: pReason, LastTransitionTime: now})
	st.Conditions = setCondition(st.Conditions, clonev1.Condition{Type: clonev1.ConditionReady, Status: ready, Reason: rReason, LastTransitionTime: now})
}

func setCondition(conds []clonev1.Condition, c clonev1.Condition) []clonev1.Condition {
	for i := range conds {
		if conds[i].Type != c.Type {
			continue
		}
		if conds[i].Status != c.Status || conds[i].Reason != c.Reason {
			conds[i] = c
		}
		return conds
	}
	return append(conds, c)
}
