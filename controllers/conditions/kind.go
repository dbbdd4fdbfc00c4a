package conditions

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	exportv1 "kubevirt.io/api/export/v1beta1"
	poolv1 "kubevirt.io/api/pool/v1beta1"
)

// Kind says how to reach the fields of one kind's condition struct C, whose
// type field is of type T. Build one with VMI, VM, Migration, ReplicaSet, Pool, Export or Pod, or with
// NewKind for a kind of your own.
type Kind[C any, T ~string] struct {
	fields func(*C) Fields[T]
}

// Fields points at the fields of one condition that the rule reads and writes.
type Fields[T ~string] struct {
	Type               *T
	Status             *corev1.ConditionStatus
	Reason, Message    *string
	LastProbeTime      *metav1.Time
	LastTransitionTime *metav1.Time
}

// NewKind returns the Kind whose conditions fields reaches into; fields must
// return pointers into the condition it is given.
func NewKind[C any, T ~string](fields func(*C) Fields[T]) Kind[C, T] {
	return Kind[C, T]{fields: fields}
}

// VMI is the kind of status.conditions of a VirtualMachineInstance.
func VMI() Kind[virtv1.VirtualMachineInstanceCondition, virtv1.VirtualMachineInstanceConditionType] {
	return NewKind(func(c *virtv1.VirtualMachineInstanceCondition) Fields[virtv1.VirtualMachineInstanceConditionType] {
		return Fields[virtv1.VirtualMachineInstanceConditionType]{Type: &c.Type, Status: &c.Status, Reason: &c.Reason,
			Message: &c.Message, LastProbeTime: &c.LastProbeTime, LastTransitionTime: &c.LastTransitionTime}
	})
}

// VM is the kind of status.conditions of a VirtualMachine.
func VM() Kind[virtv1.VirtualMachineCondition, virtv1.VirtualMachineConditionType] {
	return NewKind(func(c *virtv1.VirtualMachineCondition) Fields[virtv1.VirtualMachineConditionType] {
		return Fields[virtv1.VirtualMachineConditionType]{Type: &c.Type, Status: &c.Status, Reason: &c.Reason,
			Message: &c.Message, LastProbeTime: &c.LastProbeTime, LastTransitionTime: &c.LastTransitionTime}
	})
}

// Migration is the kind of status.conditions of a
// VirtualMachineInstanceMigration.
func Migration() Kind[virtv1.VirtualMachineInstanceMigrationCondition, virtv1.VirtualMachineInstanceMigrationConditionType] {
	return NewKind(func(c *virtv1.VirtualMachineInstanceMigrationCondition) Fields[virtv1.VirtualMachineInstanceMigrationConditionType] {
		return Fields[virtv1.VirtualMachineInstanceMigrationConditionType]{Type: &c.Type, Status: &c.Status, Reason: &c.Reason,
			Message: &c.Message, LastProbeTime: &c.LastProbeTime, LastTransitionTime: &c.LastTransitionTime}
	})
}

// Pod is the kind of status.conditions of a Pod. The controllers only read
// those (the kubelet and the scheduler own them); Set leaves the fields the
// rule does not know, such as observedGeneration, as the caller gave them.
func Pod() Kind[corev1.PodCondition, corev1.PodConditionType] {
	return NewKind(func(c *corev1.PodCondition) Fields[corev1.PodConditionType] {
		return Fields[corev1.PodConditionType]{Type: &c.Type, Status: &c.Status, Reason: &c.Reason,
			Message: &c.Message, LastProbeTime: &c.LastProbeTime, LastTransitionTime: &c.LastTransitionTime}
	})
}

// ReplicaSet is the kind of status.conditions of a
// VirtualMachineInstanceReplicaSet.
func ReplicaSet() Kind[virtv1.VirtualMachineInstanceReplicaSetCondition, virtv1.VirtualMachineInstanceReplicaSetConditionType] {
	return NewKind(func(c *virtv1.VirtualMachineInstanceReplicaSetCondition) Fields[virtv1.VirtualMachineInstanceReplicaSetConditionType] {
		return Fields[virtv1.VirtualMachineInstanceReplicaSetConditionType]{Type: &c.Type, Status: &c.Status, Reason: &c.Reason,
			Message: &c.Message, LastProbeTime: &c.LastProbeTime, LastTransitionTime: &c.LastTransitionTime}
	})
}

// Pool is the kind of status.conditions of a VirtualMachinePool.
func Pool() Kind[poolv1.VirtualMachinePoolCondition, poolv1.VirtualMachinePoolConditionType] {
	return NewKind(func(c *poolv1.VirtualMachinePoolCondition) Fields[poolv1.VirtualMachinePoolConditionType] {
		return Fields[poolv1.VirtualMachinePoolConditionType]{Type: &c.Type, Status: &c.Status, Reason: &c.Reason,
			Message: &c.Message, LastProbeTime: &c.LastProbeTime, LastTransitionTime: &c.LastTransitionTime}
	})
}

// Export is the kind of status.conditions of a VirtualMachineExport.
func Export() Kind[exportv1.Condition, exportv1.ConditionType] {
	return NewKind(func(c *exportv1.Condition) Fields[exportv1.ConditionType] {
		return Fields[exportv1.ConditionType]{Type: &c.Type, Status: &c.Status, Reason: &c.Reason,
			Message: &c.Message, LastProbeTime: &c.LastProbeTime, LastTransitionTime: &c.LastTransitionTime}
	})
}
