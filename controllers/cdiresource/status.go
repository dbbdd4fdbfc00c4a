package cdiresource

import (
	conditionsv1 "github.com/openshift/custom-resource-status/conditions/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sdkapi "kubevirt.io/controller-lifecycle-operator-sdk/api"
)

// The reasons and messages of the conditions and events, as CDI's
// operator writes them.
const (
	ReasonDeployCompleted = "DeployCompleted"
	MessageDeployed       = "Deployment Completed"
	ReasonConfigError     = "ConfigError"
	MessageUnwanted       = "Reconciling to error state, unwanted CDI object"
)

// NextStatus is the status of a CDI resource whose status is cur: the
// active one is Deployed and Available; any other is in phase Error and
// Degraded. A condition's times change only when its status does (now).
func NextStatus(cur sdkapi.Status, active bool, now metav1.Time) sdkapi.Status {
	st := cur
	conds := append([]conditionsv1.Condition(nil), cur.Conditions...)
	if active {
		st.Phase = sdkapi.PhaseDeployed
		conds = setCondition(conds, conditionsv1.Condition{Type: conditionsv1.ConditionAvailable, Status: corev1.ConditionTrue, Reason: ReasonDeployCompleted, Message: MessageDeployed}, now)
		conds = setCondition(conds, conditionsv1.Condition{Type: conditionsv1.ConditionProgressing, Status: corev1.ConditionFalse}, now)
		conds = setCondition(conds, conditionsv1.Condition{Type: conditionsv1.ConditionDegraded, Status: corev1.ConditionFalse}, now)
	} else {
		st.Phase = sdkapi.PhaseError
		conds = setCondition(conds, conditionsv1.Condition{Type: conditionsv1.ConditionAvailable, Status: corev1.ConditionFalse}, now)
		conds = setCondition(conds, conditionsv1.Condition{Type: conditionsv1.ConditionProgressing, Status: corev1.ConditionFalse}, now)
		conds = setCondition(conds, conditionsv1.Condition{Type: conditionsv1.ConditionDegraded, Status: corev1.ConditionTrue, Reason: ReasonConfigError, Message: MessageUnwanted}, now)
	}
	st.Conditions = conds
	return st
}

// setCondition puts c into conds: its reason and message replace the old
// ones; its times are now when it is new or its status changed, else the
// old ones (so that an unchanged status writes nothing).
func setCondition(conds []conditionsv1.Condition, c conditionsv1.Condition, now metav1.Time) []conditionsv1.Condition {
	for i := range conds {
		if conds[i].Type != c.Type {
			continue
		}
		if conds[i].Status == c.Status {
			c.LastTransitionTime, c.LastHeartbeatTime = conds[i].LastTransitionTime, conds[i].LastHeartbeatTime
		} else {
			c.LastTransitionTime, c.LastHeartbeatTime = now, now
		}
		conds[i] = c
		return conds
	}
	c.LastTransitionTime, c.LastHeartbeatTime = now, now
	return append(conds, c)
}
