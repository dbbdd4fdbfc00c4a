package migrate_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/migrate"
)

func TestDrainTainted(t *testing.T) {
	node := func(taints ...corev1.Taint) *corev1.Node { return &corev1.Node{Spec: corev1.NodeSpec{Taints: taints}} }
	for _, tc := range []struct {
		name        string
		node        *corev1.Node
		key         string
		want, maybe bool
	}{
		{"no taint", node(), "kubevirt.io/drain", false, false},
		{"drain taint", node(corev1.Taint{Key: "kubevirt.io/drain", Value: "draining", Effect: corev1.TaintEffectNoSchedule}), "kubevirt.io/drain", true, true},
		{"another effect", node(corev1.Taint{Key: "kubevirt.io/drain", Effect: corev1.TaintEffectNoExecute}), "kubevirt.io/drain", false, false},
		{"another key", node(corev1.Taint{Key: "node.kubernetes.io/unschedulable", Effect: corev1.TaintEffectNoSchedule}), "kubevirt.io/drain", false, true},
		{"the CR's key", node(corev1.Taint{Key: "example.com/maintenance", Effect: corev1.TaintEffectNoSchedule}), "example.com/maintenance", true, true},
		{"no key", node(corev1.Taint{Key: "kubevirt.io/drain", Effect: corev1.TaintEffectNoSchedule}), "", false, true},
	} {
		if got := migrate.DrainTainted(tc.node, tc.key); got != tc.want {
			t.Errorf("%s: DrainTainted = %t, want %t", tc.name, got, tc.want)
		}
		if got := migrate.MayHaveDrainTaint(tc.node); got != tc.maybe {
			t.Errorf("%s: MayHaveDrainTaint = %t, want %t", tc.name, got, tc.maybe)
		}
	}
}

func TestLeavesDrainTaintedNode(t *testing.T) {
	vmi := func(st corev1.ConditionStatus) *virtv1.VirtualMachineInstance {
		v := &virtv1.VirtualMachineInstance{}
		if st != "" {
			v.Status.Conditions = []virtv1.VirtualMachineInstanceCondition{{Type: virtv1.VirtualMachineInstanceIsMigratable, Status: st}}
		}
		return v
	}
	for _, tc := range []struct {
		strategy   virtv1.EvictionStrategy
		migratable corev1.ConditionStatus
		want       bool
	}{
		{virtv1.EvictionStrategyLiveMigrate, corev1.ConditionTrue, true},
		{virtv1.EvictionStrategyLiveMigrateIfPossible, corev1.ConditionTrue, true},
		{virtv1.EvictionStrategyLiveMigrate, corev1.ConditionFalse, false},
		{virtv1.EvictionStrategyLiveMigrate, "", false},
		{virtv1.EvictionStrategyNone, corev1.ConditionTrue, false},
		{virtv1.EvictionStrategyExternal, corev1.ConditionTrue, false},
	} {
		if got := migrate.LeavesDrainTaintedNode(vmi(tc.migratable), tc.strategy); got != tc.want {
			t.Errorf("%s, LiveMigratable %q: %t, want %t", tc.strategy, tc.migratable, got, tc.want)
		}
	}
}
