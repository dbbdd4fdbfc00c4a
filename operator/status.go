package operator

import (
	"fmt"
	"runtime"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
)

// The reasons and messages of the KubeVirt CR's conditions, KubeVirt's.
const (
	ReasonExistingDeployment = "ExistingDeployment"
	ReasonDeploymentFailed   = "DeploymentFailed"
	ReasonDeletionFailed     = "DeletionFailed"
	ReasonAllResourcesCreate = "AllResourcesCreated"
	ReasonAllComponentsReady = "AllComponentsReady"
	ReasonDeploying          = "DeploymentInProgress"
	ReasonUpdating           = "UpdateInProgress"
	ReasonDeleting           = "DeletionInProgress"

	MessageExisting  = "There is an active KubeVirt deployment"
	MessageCreated   = "All resources were created."
	MessageAvailable = "All components are ready."
	MessageDeleting  = "Deletion was triggered"
)

// Observation is what a reconcile found, the input of [Status]. Plain data.
type Observation struct {
	// Target is what the CR asks for; Version the operator's own.
	Target  Target
	Version string
	// Generation is the CR's metadata.generation.
	Generation int64
	// Existing: another KubeVirt CR is installed, or this one is outside
	// the operator's namespace. Nothing else is looked at then.
	Existing bool
	// Deleting: the CR is being deleted; Deleted: everything is gone.
	Deleting, Deleted bool
	// Failed is why installing or deleting did not go through: an invalid
	// configuration (naming the field), an object the apiserver refused,
	// workloads that block an uninstall.
	Failed error
	// Created: every object was applied. NotReady names the workloads
	// whose pods are not all up to date and ready.
	Created  bool
	NotReady []string
}

// Status returns the CR's next status from its current one and what a
// reconcile observed, with KubeVirt's phases, conditions and their
// reasons. Conditions whose status, reason and message do not change keep
// their times; now stamps the others.
func Status(cur virtv1.KubeVirtStatus, o Observation, now metav1.Time) virtv1.KubeVirtStatus {
	st := *cur.DeepCopy()
	set := func(t virtv1.KubeVirtConditionType, s corev1.ConditionStatus, reason, msg string) {
		st.Conditions = setCondition(st.Conditions, virtv1.KubeVirtCondition{Type: t, Status: s, Reason: reason, Message: msg}, now)
	}
	all := func(available, progressing, degraded corev1.ConditionStatus, reason, msg string) {
		set(virtv1.KubeVirtConditionAvailable, available, reason, msg)
		set(virtv1.KubeVirtConditionProgressing, progressing, reason, msg)
		set(virtv1.KubeVirtConditionDegraded, degraded, reason, msg)
	}
	if o.Existing {
		set(virtv1.KubeVirtConditionSynchronized, corev1.ConditionFalse, ReasonExistingDeployment, MessageExisting)
		return st
	}
	if o.Deleting {
		if o.Deleted {
			st.Phase = virtv1.KubeVirtPhaseDeleted
			return st
		}
		st.Phase = virtv1.KubeVirtPhaseDeleting
		st.Conditions = dropConditions(st.Conditions, virtv1.KubeVirtConditionCreated)
		all(corev1.ConditionFalse, corev1.ConditionFalse, corev1.ConditionTrue, ReasonDeleting, MessageDeleting)
		if o.Failed != nil {
			set(virtv1.KubeVirtConditionSynchronized, corev1.ConditionFalse, ReasonDeletionFailed,
				"An error occurred during deletion: "+o.Failed.Error())
		} else {
			st.Conditions = dropConditions(st.Conditions, virtv1.KubeVirtConditionSynchronized)
		}
		return st
	}

	st.OperatorVersion = o.Version
	st.TargetKubeVirtVersion = o.Target.Tag
	st.TargetKubeVirtRegistry = o.Target.Registry
	st.TargetDeploymentID = deploymentID(o.Target)
	if st.DefaultArchitecture == "" {
		st.DefaultArchitecture = runtime.GOARCH
	}
	if st.Phase == "" {
		st.Phase = virtv1.KubeVirtPhaseDeploying
	}
	if o.Failed != nil {
		set(virtv1.KubeVirtConditionSynchronized, corev1.ConditionFalse, ReasonDeploymentFailed,
			"An error occurred during deployment: "+o.Failed.Error())
		all(corev1.ConditionFalse, corev1.ConditionFalse, corev1.ConditionTrue, ReasonDeploymentFailed,
			"An error occurred during deployment: "+o.Failed.Error())
		return st
	}
	st.Conditions = dropConditions(st.Conditions, virtv1.KubeVirtConditionSynchronized)
	if updating := st.ObservedDeploymentID != "" && st.ObservedDeploymentID != st.TargetDeploymentID; updating {
		st.Conditions = dropConditions(st.Conditions, virtv1.KubeVirtConditionCreated)
		all(corev1.ConditionTrue, corev1.ConditionTrue, corev1.ConditionTrue, ReasonUpdating,
			fmt.Sprintf("Transitioning from previous version %s with registry %s to target version %s using registry %s",
				st.ObservedKubeVirtVersion, st.ObservedKubeVirtRegistry, o.Target.Tag, o.Target.Registry))
	} else if st.Phase != virtv1.KubeVirtPhaseDeployed || len(o.NotReady) > 0 || !o.Created {
		all(corev1.ConditionFalse, corev1.ConditionTrue, corev1.ConditionFalse, ReasonDeploying,
			fmt.Sprintf("Deploying version %s with registry %s", o.Target.Tag, o.Target.Registry))
	}
	if !o.Created {
		return st
	}
	set(virtv1.KubeVirtConditionCreated, corev1.ConditionTrue, ReasonAllResourcesCreate, MessageCreated)
	if len(o.NotReady) > 0 {
		return st
	}
	st.ObservedKubeVirtVersion = o.Target.Tag
	st.ObservedKubeVirtRegistry = o.Target.Registry
	st.ObservedDeploymentID = st.TargetDeploymentID
	st.Phase = virtv1.KubeVirtPhaseDeployed
	all(corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionFalse, ReasonAllComponentsReady, MessageAvailable)
	st.ObservedGeneration = &o.Generation
	return st
}

// deploymentID identifies what an installation runs: its images.
func deploymentID(t Target) string { return t.Registry + "/*:" + t.Tag }

// setCondition puts c into conds: a new condition gets a probe time, a
// changed one a probe and a transition time, an unchanged one keeps its own.
func setCondition(conds []virtv1.KubeVirtCondition, c virtv1.KubeVirtCondition, now metav1.Time) []virtv1.KubeVirtCondition {
	for i, old := range conds {
		if old.Type != c.Type {
			continue
		}
		if old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message {
			return conds
		}
		c.LastProbeTime, c.LastTransitionTime = now, now
		conds[i] = c
		return conds
	}
	c.LastProbeTime = now
	return append(conds, c)
}

func dropConditions(conds []virtv1.KubeVirtCondition, t virtv1.KubeVirtConditionType) []virtv1.KubeVirtCondition {
	out := conds[:0]
	for _, c := range conds {
		if c.Type != t {
			out = append(out, c)
		}
	}
	return out
}
