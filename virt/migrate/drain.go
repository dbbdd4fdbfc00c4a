package migrate

import (
	corev1 "k8s.io/api/core/v1"
	virtv1 "kubevirt.io/api/core/v1"
)

// DrainTainted reports whether node carries KubeVirt's drain taint: key
// (the KubeVirt CR's migrations.nodeDrainTaintKey, Config.NodeDrainTaintKey)
// with effect NoSchedule, whatever its value, as
// `kubectl taint node NODE kubevirt.io/drain=draining:NoSchedule` sets it.
func DrainTainted(node *corev1.Node, key string) bool {
	if node == nil || key == "" {
		return false
	}
	for _, t := range node.Spec.Taints {
		if t.Key == key && t.Effect == corev1.TaintEffectNoSchedule {
			return true
		}
	}
	return false
}

// MayHaveDrainTaint reports whether node has any NoSchedule taint, the
// cheap test before reading which key drains ([DrainTainted]).
func MayHaveDrainTaint(node *corev1.Node) bool {
	for _, t := range node.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoSchedule {
			return true
		}
	}
	return false
}

// LeavesDrainTaintedNode reports whether vmi, running on a node with the
// drain taint, is moved away by live migration, as KubeVirt's evacuation
// controller moves it: its eviction strategy (strategy, [EvictionStrategy])
// is LiveMigrate or LiveMigrateIfPossible, and it is live-migratable now
// (its LiveMigratable condition is True). Others stay; a drain's evictions
// decide their fate ([DecideEviction]).
func LeavesDrainTaintedNode(vmi *virtv1.VirtualMachineInstance, strategy virtv1.EvictionStrategy) bool {
	if strategy != virtv1.EvictionStrategyLiveMigrate && strategy != virtv1.EvictionStrategyLiveMigrateIfPossible {
		return false
	}
	for _, c := range vmi.Status.Conditions {
		if c.Type == virtv1.VirtualMachineInstanceIsMigratable {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
