package conditions_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/controllers/conditions"
)

var (
	t0  = metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	t1  = metav1.NewTime(t0.Add(time.Minute))
	now = metav1.NewTime(t0.Add(time.Hour))
)

func vmiCond(t virtv1.VirtualMachineInstanceConditionType, s corev1.ConditionStatus, reason, msg string, probe, transition metav1.Time) virtv1.VirtualMachineInstanceCondition {
	return virtv1.VirtualMachineInstanceCondition{Type: t, Status: s, Reason: reason, Message: msg, LastProbeTime: probe, LastTransitionTime: transition}
}

func TestSet(t *testing.T) {
	const ready, paused = virtv1.VirtualMachineInstanceReady, virtv1.VirtualMachineInstancePaused
	var zero metav1.Time
	tests := []struct {
		name        string
		conds       []virtv1.VirtualMachineInstanceCondition
		set         virtv1.VirtualMachineInstanceCondition
		now         *metav1.Time // default: now
		want        []virtv1.VirtualMachineInstanceCondition
		wantChanged bool
	}{{
		name:        "new condition without a transition time: now",
		set:         vmiCond(ready, corev1.ConditionTrue, "", "", zero, zero),
		want:        []virtv1.VirtualMachineInstanceCondition{vmiCond(ready, corev1.ConditionTrue, "", "", zero, now)},
		wantChanged: true,
	}, {
		name:        "new condition keeps the transition time it carries (mirrored from another object)",
		conds:       []virtv1.VirtualMachineInstanceCondition{vmiCond(paused, corev1.ConditionTrue, "", "", zero, t0)},
		set:         vmiCond(ready, corev1.ConditionFalse, "PodNotReady", "", t1, t1),
		want:        []virtv1.VirtualMachineInstanceCondition{vmiCond(paused, corev1.ConditionTrue, "", "", zero, t0), vmiCond(ready, corev1.ConditionFalse, "PodNotReady", "", t1, t1)},
		wantChanged: true,
	}, {
		name:  "same status, reason and message: nothing changes",
		conds: []virtv1.VirtualMachineInstanceCondition{vmiCond(ready, corev1.ConditionTrue, "", "", t0, t0)},
		set:   vmiCond(ready, corev1.ConditionTrue, "", "", zero, now),
		want:  []virtv1.VirtualMachineInstanceCondition{vmiCond(ready, corev1.ConditionTrue, "", "", t0, t0)},
	}, {
		name:        "same status, new message: both times stay",
		conds:       []virtv1.VirtualMachineInstanceCondition{vmiCond(ready, corev1.ConditionFalse, "R", "old", t0, t0)},
		set:         vmiCond(ready, corev1.ConditionFalse, "R", "new", zero, now),
		want:        []virtv1.VirtualMachineInstanceCondition{vmiCond(ready, corev1.ConditionFalse, "R", "new", t0, t0)},
		wantChanged: true,
	}, {
		name:        "same status, new reason: the transition time stays, the probe time is the new one's",
		conds:       []virtv1.VirtualMachineInstanceCondition{vmiCond(ready, corev1.ConditionFalse, "A", "", t0, t0)},
		set:         vmiCond(ready, corev1.ConditionFalse, "B", "", t1, now),
		want:        []virtv1.VirtualMachineInstanceCondition{vmiCond(ready, corev1.ConditionFalse, "B", "", t1, t0)},
		wantChanged: true,
	}, {
		name:        "new status: the new condition's times",
		conds:       []virtv1.VirtualMachineInstanceCondition{vmiCond(ready, corev1.ConditionFalse, "A", "", t0, t0)},
		set:         vmiCond(ready, corev1.ConditionTrue, "", "", t1, t1),
		want:        []virtv1.VirtualMachineInstanceCondition{vmiCond(ready, corev1.ConditionTrue, "", "", t1, t1)},
		wantChanged: true,
	}, {
		name:        "new status without a transition time: now",
		conds:       []virtv1.VirtualMachineInstanceCondition{vmiCond(ready, corev1.ConditionFalse, "A", "", t0, t0)},
		set:         vmiCond(ready, corev1.ConditionTrue, "", "", zero, zero),
		want:        []virtv1.VirtualMachineInstanceCondition{vmiCond(ready, corev1.ConditionTrue, "", "", zero, now)},
		wantChanged: true,
	}, {
		name:        "same status over a condition that never had a transition time: stamped",
		conds:       []virtv1.VirtualMachineInstanceCondition{vmiCond(ready, corev1.ConditionTrue, "", "", zero, zero)},
		set:         vmiCond(ready, corev1.ConditionTrue, "", "", zero, zero),
		want:        []virtv1.VirtualMachineInstanceCondition{vmiCond(ready, corev1.ConditionTrue, "", "", zero, now)},
		wantChanged: true,
	}, {
		name:        "zero now: a mirrored condition without a transition time keeps none",
		set:         vmiCond(ready, corev1.ConditionTrue, "", "", zero, zero),
		now:         &zero,
		want:        []virtv1.VirtualMachineInstanceCondition{vmiCond(ready, corev1.ConditionTrue, "", "", zero, zero)},
		wantChanged: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conds := append([]virtv1.VirtualMachineInstanceCondition(nil), tt.conds...)
			at := now
			if tt.now != nil {
				at = *tt.now
			}
			changed := conditions.VMI().Set(&conds, tt.set, at)
			if diff := cmp.Diff(tt.want, conds); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if changed != tt.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tt.wantChanged)
			}
		})
	}
}

func TestRemove(t *testing.T) {
	a := virtv1.VirtualMachineCondition{Type: virtv1.VirtualMachineReady, Status: corev1.ConditionTrue}
	b := virtv1.VirtualMachineCondition{Type: virtv1.VirtualMachineFailure, Status: corev1.ConditionTrue}
	tests := []struct {
		name        string
		conds       []virtv1.VirtualMachineCondition
		remove      virtv1.VirtualMachineConditionType
		want        []virtv1.VirtualMachineCondition
		wantRemoved bool
	}{
		{name: "one of two", conds: []virtv1.VirtualMachineCondition{a, b}, remove: virtv1.VirtualMachineReady, want: []virtv1.VirtualMachineCondition{b}, wantRemoved: true},
		{name: "the last one leaves nil", conds: []virtv1.VirtualMachineCondition{a}, remove: virtv1.VirtualMachineReady, want: nil, wantRemoved: true},
		{name: "absent", conds: []virtv1.VirtualMachineCondition{b}, remove: virtv1.VirtualMachineReady, want: []virtv1.VirtualMachineCondition{b}},
		{name: "an empty list becomes nil", conds: []virtv1.VirtualMachineCondition{}, remove: virtv1.VirtualMachineReady, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conds := append(tt.conds[:0:0], tt.conds...)
			if tt.conds != nil && len(tt.conds) == 0 {
				conds = []virtv1.VirtualMachineCondition{}
			}
			removed := conditions.VM().Remove(&conds, tt.remove)
			if diff := cmp.Diff(tt.want, conds); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if conds == nil != (tt.want == nil) {
				t.Errorf("conditions nil = %v, want %v", conds == nil, tt.want == nil)
			}
			if removed != tt.wantRemoved {
				t.Errorf("removed = %v, want %v", removed, tt.wantRemoved)
			}
		})
	}
}

func TestFind(t *testing.T) {
	pod := []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
		{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady"},
	}
	tests := []struct {
		name string
		find corev1.PodConditionType
		want *corev1.PodCondition
	}{
		{name: "present", find: corev1.PodReady, want: &pod[1]},
		{name: "absent", find: corev1.ContainersReady, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := conditions.Pod().Find(pod, tt.find)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Find (-want +got):\n%s", diff)
			}
			if got != nil && got != tt.want {
				t.Error("Find returned a copy, not the condition in the list")
			}
		})
	}
}

// IsTrue is true only for a condition that is there with status True.
func TestIsTrue(t *testing.T) {
	pod := []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
		{Type: corev1.PodReady, Status: corev1.ConditionFalse},
		{Type: corev1.ContainersReady, Status: corev1.ConditionUnknown},
	}
	for typ, want := range map[corev1.PodConditionType]bool{
		corev1.PodScheduled: true, corev1.PodReady: false, corev1.ContainersReady: false, corev1.PodInitialized: false,
	} {
		if got := conditions.Pod().IsTrue(pod, typ); got != want {
			t.Errorf("IsTrue(%s) = %v, want %v", typ, got, want)
		}
	}
}

func TestMigrationKind(t *testing.T) {
	var conds []virtv1.VirtualMachineInstanceMigrationCondition
	c := virtv1.VirtualMachineInstanceMigrationCondition{Type: virtv1.VirtualMachineInstanceMigrationAbortRequested, Status: corev1.ConditionTrue}
	if !conditions.Migration().Set(&conds, c, now) {
		t.Fatal("Set of a new condition reported no change")
	}
	want := []virtv1.VirtualMachineInstanceMigrationCondition{{Type: c.Type, Status: c.Status, LastTransitionTime: now}}
	if diff := cmp.Diff(want, conds); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
}
