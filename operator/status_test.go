package operator_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/operator"
)

var (
	t0 = metav1.NewTime(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
	t1 = metav1.NewTime(t0.Add(time.Minute))
)

type cond struct {
	S      corev1.ConditionStatus
	Reason string
}

// conds summarizes a status's conditions by type.
func conds(st virtv1.KubeVirtStatus) map[virtv1.KubeVirtConditionType]cond {
	out := map[virtv1.KubeVirtConditionType]cond{}
	for _, c := range st.Conditions {
		out[c.Type] = cond{c.Status, c.Reason}
	}
	return out
}

func TestStatusPhasesAndConditions(t *testing.T) {
	target := operator.Target{Registry: "r", Tag: "v1"}
	deployed := operator.Status(virtv1.KubeVirtStatus{}, operator.Observation{Target: target, Created: true}, t0)
	for _, tc := range []struct {
		name  string
		cur   virtv1.KubeVirtStatus
		obs   operator.Observation
		phase virtv1.KubeVirtPhase
		want  map[virtv1.KubeVirtConditionType]cond
	}{{
		name: "first sight: deploying", obs: operator.Observation{Target: target},
		phase: virtv1.KubeVirtPhaseDeploying,
		want: map[virtv1.KubeVirtConditionType]cond{
			"Available": {"False", operator.ReasonDeploying}, "Progressing": {"True", operator.ReasonDeploying}, "Degraded": {"False", operator.ReasonDeploying}},
	}, {
		name: "created, a daemon not ready", obs: operator.Observation{Target: target, Created: true, NotReady: []string{"DaemonSet virt-handler"}},
		phase: virtv1.KubeVirtPhaseDeploying,
		want: map[virtv1.KubeVirtConditionType]cond{
			"Available": {"False", operator.ReasonDeploying}, "Progressing": {"True", operator.ReasonDeploying}, "Degraded": {"False", operator.ReasonDeploying},
			"Created": {"True", operator.ReasonAllResourcesCreate}},
	}, {
		name: "all ready: deployed", obs: operator.Observation{Target: target, Created: true},
		phase: virtv1.KubeVirtPhaseDeployed,
		want: map[virtv1.KubeVirtConditionType]cond{
			"Available": {"True", operator.ReasonAllComponentsReady}, "Progressing": {"False", operator.ReasonAllComponentsReady},
			"Degraded": {"False", operator.ReasonAllComponentsReady}, "Created": {"True", operator.ReasonAllResourcesCreate}},
	}, {
		name: "another registry: updating", cur: deployed, obs: operator.Observation{Target: operator.Target{Registry: "r2", Tag: "v2"}, Created: true, NotReady: []string{"Deployment virt-api"}},
		phase: virtv1.KubeVirtPhaseDeployed,
		want: map[virtv1.KubeVirtConditionType]cond{
			"Available": {"True", operator.ReasonUpdating}, "Progressing": {"True", operator.ReasonUpdating}, "Degraded": {"True", operator.ReasonUpdating},
			// Created again once the sync went through, as KubeVirt does.
			"Created": {"True", operator.ReasonAllResourcesCreate}},
	}, {
		name: "invalid: failed", obs: operator.Observation{Target: target, Failed: errors.New("spec.x: Invalid value")},
		phase: virtv1.KubeVirtPhaseDeploying,
		want: map[virtv1.KubeVirtConditionType]cond{
			"Available": {"False", operator.ReasonDeploymentFailed}, "Progressing": {"False", operator.ReasonDeploymentFailed},
			"Degraded": {"True", operator.ReasonDeploymentFailed}, "Synchronized": {"False", operator.ReasonDeploymentFailed}},
	}, {
		name: "another CR: only Synchronized", cur: deployed, obs: operator.Observation{Existing: true},
		phase: virtv1.KubeVirtPhaseDeployed,
		want: map[virtv1.KubeVirtConditionType]cond{
			"Available": {"True", operator.ReasonAllComponentsReady}, "Progressing": {"False", operator.ReasonAllComponentsReady},
			"Degraded": {"False", operator.ReasonAllComponentsReady}, "Created": {"True", operator.ReasonAllResourcesCreate},
			"Synchronized": {"False", operator.ReasonExistingDeployment}},
	}, {
		name: "deleting", cur: deployed, obs: operator.Observation{Deleting: true},
		phase: virtv1.KubeVirtPhaseDeleting,
		want: map[virtv1.KubeVirtConditionType]cond{
			"Available": {"False", operator.ReasonDeleting}, "Progressing": {"False", operator.ReasonDeleting}, "Degraded": {"True", operator.ReasonDeleting}},
	}, {
		name: "deletion blocked", cur: deployed, obs: operator.Observation{Deleting: true, Failed: errors.New("VMs")},
		phase: virtv1.KubeVirtPhaseDeleting,
		want: map[virtv1.KubeVirtConditionType]cond{
			"Available": {"False", operator.ReasonDeleting}, "Progressing": {"False", operator.ReasonDeleting}, "Degraded": {"True", operator.ReasonDeleting},
			"Synchronized": {"False", operator.ReasonDeletionFailed}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := operator.Status(tc.cur, tc.obs, t1)
			if got.Phase != tc.phase {
				t.Errorf("phase %q, want %q", got.Phase, tc.phase)
			}
			if diff := cmp.Diff(tc.want, conds(got)); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
		})
	}
}

// Observed fields follow the target only once it is ready.
func TestStatusObservedOnlyWhenReady(t *testing.T) {
	target := operator.Target{Registry: "r", Tag: "v1"}
	st := operator.Status(virtv1.KubeVirtStatus{}, operator.Observation{Target: target, Created: true, NotReady: []string{"x"}, Generation: 3}, t0)
	if st.ObservedKubeVirtVersion != "" || st.ObservedGeneration != nil || st.TargetKubeVirtVersion != "v1" {
		t.Errorf("not ready: observed %q generation %v target %q", st.ObservedKubeVirtVersion, st.ObservedGeneration, st.TargetKubeVirtVersion)
	}
	st = operator.Status(st, operator.Observation{Target: target, Created: true, Generation: 3}, t1)
	if st.ObservedKubeVirtVersion != "v1" || st.ObservedKubeVirtRegistry != "r" || st.ObservedGeneration == nil || *st.ObservedGeneration != 3 {
		t.Errorf("ready: observed %q %q generation %v", st.ObservedKubeVirtVersion, st.ObservedKubeVirtRegistry, st.ObservedGeneration)
	}
}

// An unchanged condition keeps its times; a changed one gets new ones; a
// new one gets a probe time only, as KubeVirt stamps them.
func TestStatusConditionTimes(t *testing.T) {
	target := operator.Target{Registry: "r", Tag: "v1"}
	first := operator.Status(virtv1.KubeVirtStatus{}, operator.Observation{Target: target}, t0)
	for _, c := range first.Conditions {
		if !c.LastProbeTime.Equal(&t0) || !c.LastTransitionTime.IsZero() {
			t.Errorf("new %s: probe %v transition %v", c.Type, c.LastProbeTime, c.LastTransitionTime)
		}
	}
	same := operator.Status(first, operator.Observation{Target: target}, t1)
	if diff := cmp.Diff(first.Conditions, same.Conditions); diff != "" {
		t.Errorf("unchanged conditions changed (-before +after):\n%s", diff)
	}
	ready := operator.Status(same, operator.Observation{Target: target, Created: true}, t1)
	for _, c := range ready.Conditions {
		if c.Type == virtv1.KubeVirtConditionAvailable && (!c.LastTransitionTime.Equal(&t1) || !c.LastProbeTime.Equal(&t1)) {
			t.Errorf("changed Available: probe %v transition %v, want %v", c.LastProbeTime, c.LastTransitionTime, t1)
		}
	}
}

// A Deployment is ready once its rollout is done, as kubectl rollout
// status says: an old pod that still serves while the new one waits does
// not make it ready.
func TestDeploymentReady(t *testing.T) {
	two := int32(2)
	for _, tc := range []struct {
		name   string
		status appsv1.DeploymentStatus
		want   bool
	}{
		{"rolled out", appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2}, true},
		{"one of two available", appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 1}, true},
		{"spec not seen", appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2}, false},
		{"new pods pending beside the old", appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 4, UpdatedReplicas: 2, AvailableReplicas: 2}, false},
		{"old pod gone, new not available", appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 2, UpdatedReplicas: 2}, false},
		{"not all updated", appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 2, UpdatedReplicas: 1, AvailableReplicas: 2}, false},
	} {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: 3}, Spec: appsv1.DeploymentSpec{Replicas: &two}, Status: tc.status}
		if got := operator.DeploymentReady(d); got != tc.want {
			t.Errorf("%s: DeploymentReady = %t, want %t", tc.name, got, tc.want)
		}
	}
}
