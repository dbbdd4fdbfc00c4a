package nodehealth_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/controllers/nodehealth"
)

var now = time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)

func node(beatAgo time.Duration, notReadyFor time.Duration) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "b", Annotations: map[string]string{}}}
	if beatAgo >= 0 {
		n.Annotations[virtv1.VirtHandlerHeartbeat] = now.Add(-beatAgo).Format(time.RFC3339)
	}
	if notReadyFor > 0 {
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown,
			LastTransitionTime: metav1.NewTime(now.Add(-notReadyFor))}}
	} else {
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	}
	return n
}

func TestAssess(t *testing.T) {
	o := nodehealth.Options{}
	for _, tc := range []struct {
		name string
		node *corev1.Node
		want nodehealth.Health
	}{
		{"gone", nil, nodehealth.Health{Unresponsive: true, Down: true}},
		{"beating", node(time.Minute, 0), nodehealth.Health{Next: now.Add(4*time.Minute + time.Second)}},
		{"never beat", node(-1, 0), nodehealth.Health{}},
		{"silent handler, Ready node", node(6*time.Minute, 0), nodehealth.Health{Unresponsive: true, Next: now.Add(time.Minute)}},
		{"silent handler, not Ready for a while", node(6*time.Minute, 2*time.Minute),
			nodehealth.Health{Unresponsive: true, Next: now.Add(time.Minute)}},
		{"silent handler, not Ready past the grace", node(6*time.Minute, 6*time.Minute), nodehealth.Health{Unresponsive: true, Down: true, Next: now.Add(time.Minute)}},
		{"beating, not Ready", node(time.Minute, 2*time.Minute), nodehealth.Health{Next: now.Add(3*time.Minute + time.Second)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, nodehealth.Assess(tc.node, now, o)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	bad := node(-1, 0)
	bad.Annotations[virtv1.VirtHandlerHeartbeat] = "yesterday"
	if h := nodehealth.Assess(bad, now, o); h.Unresponsive || h.Next != now.Add(time.Minute) {
		t.Errorf("unreadable heartbeat: %+v", h)
	}
}

func TestPlan(t *testing.T) {
	for _, tc := range []struct {
		h     nodehealth.Health
		alive bool
		want  nodehealth.Action
	}{
		{nodehealth.Health{}, false, nodehealth.Action{}},
		{nodehealth.Health{Unresponsive: true}, true, nodehealth.Action{}},
		{nodehealth.Health{Unresponsive: true}, false, nodehealth.Action{Fail: true}},
		{nodehealth.Health{Unresponsive: true, Down: true}, true, nodehealth.Action{Fail: true, ForceDeletePods: true}},
		{nodehealth.Health{Down: true}, true, nodehealth.Action{}},
	} {
		if got := nodehealth.Plan(tc.h, tc.alive); got != tc.want {
			t.Errorf("Plan(%+v, alive %t) = %+v, want %+v", tc.h, tc.alive, got, tc.want)
		}
	}
}

func TestLauncherAlive(t *testing.T) {
	term := corev1.ContainerStatus{Name: "compute", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}}
	run := corev1.ContainerStatus{Name: "compute", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	sidecar := corev1.ContainerStatus{Name: "sidecar", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}}
	for _, tc := range []struct {
		name string
		st   corev1.PodStatus
		want bool
	}{
		{"pending, no status yet", corev1.PodStatus{Phase: corev1.PodPending}, true},
		{"running, a sidecar ended", corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{run, sidecar}}, true},
		{"compute ended", corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{term, sidecar}}, false},
		{"failed", corev1.PodStatus{Phase: corev1.PodFailed}, false},
		{"succeeded", corev1.PodStatus{Phase: corev1.PodSucceeded}, false},
	} {
		if got := nodehealth.LauncherAlive(&corev1.Pod{Status: tc.st}); got != tc.want {
			t.Errorf("%s: %t, want %t", tc.name, got, tc.want)
		}
	}
}
