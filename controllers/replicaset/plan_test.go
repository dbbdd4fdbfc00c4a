package replicaset

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/spec"
)

var base = time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)

func testRS(replicas int32) *virtv1.VirtualMachineInstanceReplicaSet {
	return &virtv1.VirtualMachineInstanceReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "rs-uid"},
		Spec: virtv1.VirtualMachineInstanceReplicaSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: &virtv1.VirtualMachineInstanceTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}},
		},
	}
}

// vmiOpt shapes a test VMI.
type vmiOpt func(*virtv1.VirtualMachineInstance)

func owned(uid types.UID) vmiOpt {
	return func(v *virtv1.VirtualMachineInstance) {
		yes := true
		v.OwnerReferences = []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstanceReplicaSet",
			Name: "x", UID: uid, Controller: &yes}}
	}
}
func labelled(app string) vmiOpt {
	return func(v *virtv1.VirtualMachineInstance) { v.Labels = map[string]string{"app": app} }
}
func phase(p virtv1.VirtualMachineInstancePhase) vmiOpt {
	return func(v *virtv1.VirtualMachineInstance) { v.Status.Phase = p }
}
func readyCond(s corev1.ConditionStatus, reason string) vmiOpt {
	return func(v *virtv1.VirtualMachineInstance) {
		v.Status.Conditions = append(v.Status.Conditions, virtv1.VirtualMachineInstanceCondition{
			Type: virtv1.VirtualMachineInstanceReady, Status: s, Reason: reason})
	}
}
func isReady(v *virtv1.VirtualMachineInstance) {
	phase(virtv1.Running)(v)
	readyCond(corev1.ConditionTrue, "")(v)
}
func deleting(v *virtv1.VirtualMachineInstance) {
	now := metav1.NewTime(base)
	v.DeletionTimestamp = &now
}
func age(minutes int) vmiOpt {
	return func(v *virtv1.VirtualMachineInstance) {
		v.CreationTimestamp = metav1.NewTime(base.Add(-time.Duration(minutes) * time.Minute))
	}
}

func vmi(name string, opts ...vmiOpt) virtv1.VirtualMachineInstance {
	v := virtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "web"}}}
	for _, o := range append([]vmiOpt{owned("rs-uid")}, opts...) {
		o(&v)
	}
	return v
}

func orphan(v *virtv1.VirtualMachineInstance) { v.OwnerReferences = nil }

func TestPlanFor(t *testing.T) {
	for _, c := range []struct {
		name     string
		replicas int32
		mutate   func(*virtv1.VirtualMachineInstanceReplicaSet)
		vmis     []virtv1.VirtualMachineInstance
		burst    int
		want     Plan
	}{
		{name: "nothing yet: create all", replicas: 3, want: Plan{Create: 3}},
		{name: "replicas unset means one", replicas: 0, mutate: func(rs *virtv1.VirtualMachineInstanceReplicaSet) { rs.Spec.Replicas = nil },
			want: Plan{Create: 1}},
		{name: "at count: nothing", replicas: 2, vmis: []virtv1.VirtualMachineInstance{vmi("a", isReady), vmi("b")},
			want: Plan{Replicas: 2, ReadyReplicas: 1}},
		{name: "burst bounds creation", replicas: 10, burst: 4, want: Plan{Create: 4}},
		{name: "too many: the least advanced go", replicas: 1, vmis: []virtv1.VirtualMachineInstance{
			vmi("ready", isReady), vmi("pending"), vmi("scheduled", phase(virtv1.Scheduled))},
			want: Plan{Delete: []string{"pending", "scheduled"}, Replicas: 3, ReadyReplicas: 1}},
		{name: "orphans matching are adopted and counted", replicas: 2, vmis: []virtv1.VirtualMachineInstance{vmi("o", orphan), vmi("p", orphan, labelled("db"))},
			want: Plan{Adopt: []string{"o"}, Create: 1, Replicas: 1}},
		{name: "finished orphans are not adopted", replicas: 1, vmis: []virtv1.VirtualMachineInstance{vmi("o", orphan, phase(virtv1.Succeeded))},
			want: Plan{Create: 1}},
		{name: "a replica set being deleted adopts nothing and scales nothing", replicas: 2,
			mutate: func(rs *virtv1.VirtualMachineInstanceReplicaSet) {
				now := metav1.NewTime(base)
				rs.DeletionTimestamp = &now
			},
			vmis: []virtv1.VirtualMachineInstance{vmi("o", orphan)}, want: Plan{}},
		{name: "owned but no longer matching: released, replaced", replicas: 1, vmis: []virtv1.VirtualMachineInstance{vmi("x", labelled("db"))},
			want: Plan{Release: []string{"x"}, Create: 1}},
		{name: "other controllers' VMIs are left alone", replicas: 1, vmis: []virtv1.VirtualMachineInstance{vmi("x", owned("other"))},
			want: Plan{Create: 1}},
		{name: "finished ones are cleaned and replaced", replicas: 2, vmis: []virtv1.VirtualMachineInstance{
			vmi("done", phase(virtv1.Succeeded)), vmi("failed", phase(virtv1.Failed)), vmi("up", isReady)},
			want: Plan{Create: 1, Clean: []string{"done", "failed"}, Replicas: 1, ReadyReplicas: 1}},
		{name: "lost with their pod: cleaned and replaced", replicas: 1, vmis: []virtv1.VirtualMachineInstance{
			vmi("lost", phase(virtv1.Running), readyCond(corev1.ConditionFalse, virtv1.PodTerminatingReason))},
			want: Plan{Create: 1, Clean: []string{"lost"}}},
		{name: "being deleted: not counted, not deleted again", replicas: 1, vmis: []virtv1.VirtualMachineInstance{vmi("going", deleting)},
			want: Plan{Create: 1}},
		{name: "paused: counted only", replicas: 3,
			mutate: func(rs *virtv1.VirtualMachineInstanceReplicaSet) { rs.Spec.Paused = true },
			vmis:   []virtv1.VirtualMachineInstance{vmi("a"), vmi("done", phase(virtv1.Failed)), vmi("o", orphan)},
			want:   Plan{Adopt: []string{"o"}, Replicas: 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rs := testRS(c.replicas)
			if c.mutate != nil {
				c.mutate(rs)
			}
			got, err := PlanFor(rs, c.vmis, c.burst)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(c.want, got); d != "" {
				t.Errorf("plan (-want +got):\n%s", d)
			}
		})
	}
}

func TestSelectorRefusals(t *testing.T) {
	for _, c := range []struct {
		name   string
		mutate func(*virtv1.VirtualMachineInstanceReplicaSet)
		want   string // the field error's type and path
	}{
		{"no template", func(rs *virtv1.VirtualMachineInstanceReplicaSet) { rs.Spec.Template = nil }, "FieldValueRequired spec.template"},
		{"no selector", func(rs *virtv1.VirtualMachineInstanceReplicaSet) { rs.Spec.Selector = nil }, "FieldValueRequired spec.selector"},
		{"empty selector", func(rs *virtv1.VirtualMachineInstanceReplicaSet) { rs.Spec.Selector = &metav1.LabelSelector{} }, "FieldValueRequired spec.selector"},
		{"not matching", func(rs *virtv1.VirtualMachineInstanceReplicaSet) { rs.Spec.Template.ObjectMeta.Labels = nil },
			"FieldValueInvalid spec.selector"},
	} {
		rs := testRS(1)
		c.mutate(rs)
		_, err := PlanFor(rs, nil, 0)
		var got []string
		for _, fe := range spec.FieldErrors(err) {
			got = append(got, string(fe.Type)+" "+fe.Field)
		}
		if d := cmp.Diff([]string{c.want}, got); d != "" {
			t.Errorf("%s: field errors of %v (-want +got):\n%s", c.name, err, d)
		}
	}
}

func TestDeletionOrder(t *testing.T) {
	vmis := []virtv1.VirtualMachineInstance{
		vmi("ready-old", isReady, age(30)), vmi("ready-young", isReady, age(1)),
		vmi("running", phase(virtv1.Running), age(20)), vmi("scheduled", phase(virtv1.Scheduled), age(20)),
		vmi("pending-b", age(5)), vmi("pending-a", age(5)), vmi("pending-young", age(2)),
	}
	var in []*virtv1.VirtualMachineInstance
	for i := range vmis {
		in = append(in, &vmis[i])
	}
	var got []string
	for _, v := range DeletionOrder(in) {
		got = append(got, v.Name)
	}
	want := []string{"pending-young", "pending-a", "pending-b", "scheduled", "running", "ready-young", "ready-old"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("order (-want +got):\n%s", d)
	}
	if in[0].Name != "ready-old" {
		t.Error("DeletionOrder reordered its input")
	}
}

func TestNextStatus(t *testing.T) {
	at := func(m int) metav1.Time { return metav1.NewTime(base.Add(time.Duration(m) * time.Minute)) }
	rs := testRS(3)
	p := Plan{Replicas: 2, ReadyReplicas: 1}
	st := NextStatus(rs, "app=web", p, &ScaleError{Reason: ReasonFailedCreate, Err: errors.New("quota")}, at(0))
	want := virtv1.VirtualMachineInstanceReplicaSetStatus{Replicas: 2, ReadyReplicas: 1, LabelSelector: "app=web",
		Conditions: []virtv1.VirtualMachineInstanceReplicaSetCondition{{Type: virtv1.VirtualMachineInstanceReplicaSetReplicaFailure,
			Status: corev1.ConditionTrue, Reason: ReasonFailedCreate, Message: "quota", LastTransitionTime: at(0)}}}
	if d := cmp.Diff(want, st); d != "" {
		t.Errorf("failing (-want +got):\n%s", d)
	}
	// Still failing a minute later: the transition time stays.
	rs.Status = st
	if got := NextStatus(rs, "app=web", p, &ScaleError{Reason: ReasonFailedCreate, Err: errors.New("quota")}, at(1)); !got.Conditions[0].LastTransitionTime.Equal(&want.Conditions[0].LastTransitionTime) {
		t.Errorf("transition time moved to %v", got.Conditions[0].LastTransitionTime)
	}
	// Paused and no longer failing.
	rs.Spec.Paused = true
	st = NextStatus(rs, "app=web", p, nil, at(2))
	want.Conditions = []virtv1.VirtualMachineInstanceReplicaSetCondition{{Type: virtv1.VirtualMachineInstanceReplicaSetReplicaPaused,
		Status: corev1.ConditionTrue, Reason: "Paused", Message: "Controller got paused", LastTransitionTime: at(2)}}
	if d := cmp.Diff(want, st); d != "" {
		t.Errorf("paused (-want +got):\n%s", d)
	}
	rs.Status, rs.Spec.Paused = st, false
	if got := NextStatus(rs, "app=web", p, nil, at(3)); got.Conditions != nil {
		t.Errorf("resumed: conditions %+v, want none", got.Conditions)
	}
}
