package dvspec

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
)

// AnnCloneType records on a cloned claim how it is filled: copy,
// snapshot or csi-clone (CDI's annotation).
const AnnCloneType = "cdi.kubevirt.io/cloneType"

// Reasons (and messages) of the warning a clone records when its claim's
// StorageProfile asks for a snapshot or CSI clone that cannot be made, so
// that the disk is copied instead: CDI's.
const (
	ReasonNoVolumeSnapshotClass    = "NoVolumeSnapshotClass"
	ReasonIncompatibleProvisioners = "IncompatibleProvisioners"
	ReasonIncompatibleVolumeModes  = "IncompatibleVolumeModes"
	ReasonNoVolumeExpansion        = "NoVolumeExpansion"
	ReasonIncompatiblePVC          = "ErrIncompatiblePVC"

	messageNoVolumeSnapshotClass    = "No compatible volumesnapshotclass found"
	messageIncompatibleProvisioners = "Provisioners are incompatible"
	messageIncompatibleVolumeModes  = "The volume modes of source and target are incompatible"
	messageNoVolumeExpansion        = "No volume expansion is possible"
	messageSmallerTarget            = "target resources requests storage size is smaller than the source"
	messageOtherClass               = "A CSI clone needs the source and target claims in one StorageClass"
)

// CloneFacts are what choosing how to fill a clone's claim reads.
type CloneFacts struct {
	// Strategy is status.cloneStrategy of the target claim's
	// StorageProfile; nil when it has none.
	Strategy *cdiv1.CDICloneStrategy
	// SnapshotClass is the profile's status.snapshotClass ("" none).
	SnapshotClass string
	// Source is the bound source claim; SourceClass its StorageClass and
	// SourceProvisioner that class's provisioner ("" when it has none or
	// it is gone).
	Source                         *corev1.PersistentVolumeClaim
	SourceClass, SourceProvisioner string
	// Target is the claim to make (Claim's); TargetClass its StorageClass
	// (the default one when it names none) and TargetProvisioner that
	// class's provisioner.
	Target                         *corev1.PersistentVolumeClaim
	TargetClass, TargetProvisioner string
	// AllowExpansion is the target class's allowVolumeExpansion;
	// BindsOnFirstConsumer says its claims bind only once a pod uses them,
	// and HonorsFirstConsumer that the DataVolume then waits for a
	// workload's pod to be that consumer (CDI's HonorWaitForFirstConsumer).
	AllowExpansion, BindsOnFirstConsumer, HonorsFirstConsumer bool
}

// CloneChoice is how a clone's claim is filled.
type CloneChoice struct {
	Strategy cdiv1.CDICloneStrategy
	// FallbackReason and FallbackMessage say why the profile's snapshot
	// or CSI clone cannot be made, when it cannot: the disk is copied.
	FallbackReason, FallbackMessage string
}

// Smart says whether the claim is made by the storage itself (a CSI clone
// or a claim restored from a VolumeSnapshot), with no copying pod.
func (c CloneChoice) Smart() bool {
	return c.Strategy == cdiv1.CloneStrategyCsiClone || c.Strategy == cdiv1.CloneStrategySnapshot
}

// ChooseClone picks how a clone's claim is filled, as CDI's clone planner
// does: the profile's strategy when the storage can honour it (one CSI
// driver for both claims, one volume mode, a target no smaller than the
// source and, when larger, a class that expands volumes; a
// VolumeSnapshotClass for a snapshot clone, one StorageClass for a CSI
// clone, as the external provisioner requires), else a copy with the
// reason.
//
// A CSI clone into another namespace is made in the source's namespace and
// its volume then bound to the target claim (TransferClaimName), as CDI
// does.
//
// A clone into a class whose claims bind on first consumer is made by the
// storage when a workload's pod binds the claim, where that pod runs; with
// no such pod to wait for (HonorsFirstConsumer unset), it is a copy, whose
// pod binds the claim.
//
// Where virtkit differs from CDI: a snapshot clone into another namespace,
// or a clone into another namespace's class that binds on first consumer,
// is a copy, silently (CDI moves the volume between namespaces, and binds
// it on the workload's node first); a target smaller than its source is
// copied (the copy fails if the disk does not fit) where CDI refuses it.
func ChooseClone(f CloneFacts) CloneChoice {
	copied := func(reason, msg string) CloneChoice {
		return CloneChoice{Strategy: cdiv1.CloneStrategyHostAssisted, FallbackReason: reason, FallbackMessage: msg}
	}
	noConsumer := f.BindsOnFirstConsumer && (!f.HonorsFirstConsumer || f.Source.Namespace != f.Target.Namespace)
	if f.Strategy == nil || *f.Strategy == cdiv1.CloneStrategyHostAssisted || noConsumer ||
		(f.Source.Namespace != f.Target.Namespace && *f.Strategy == cdiv1.CloneStrategySnapshot) {
		return copied("", "")
	}
	if *f.Strategy != cdiv1.CloneStrategyCsiClone && *f.Strategy != cdiv1.CloneStrategySnapshot {
		return copied("", "")
	}
	if *f.Strategy == cdiv1.CloneStrategySnapshot && f.SnapshotClass == "" {
		return copied(ReasonNoVolumeSnapshotClass, messageNoVolumeSnapshotClass)
	}
	if f.SourceProvisioner == "" || f.SourceProvisioner != f.TargetProvisioner {
		return copied(ReasonIncompatibleProvisioners, messageIncompatibleProvisioners)
	}
	if *f.Strategy == cdiv1.CloneStrategyCsiClone && f.SourceClass != f.TargetClass {
		// The external provisioner clones only within a class.
		return copied(ReasonIncompatibleProvisioners, messageOtherClass)
	}
	if IsBlock(f.Source) != IsBlock(f.Target) {
		return copied(ReasonIncompatibleVolumeModes, messageIncompatibleVolumeModes)
	}
	capacity, request := f.Source.Status.Capacity[corev1.ResourceStorage], f.Target.Spec.Resources.Requests[corev1.ResourceStorage]
	switch c := capacity.Cmp(request); {
	case c > 0:
		return copied(ReasonIncompatiblePVC, messageSmallerTarget)
	case c < 0 && !f.AllowExpansion:
		return copied(ReasonNoVolumeExpansion, messageNoVolumeExpansion)
	}
	return CloneChoice{Strategy: *f.Strategy}
}

// TransferClaimName is the claim a CSI clone into another namespace, for
// the DataVolume of UID uid, makes in the source's namespace: the driver
// clones the source into it, and its volume is then bound to the
// DataVolume's claim instead.
func TransferClaimName(uid types.UID) string { return "tmp-pvc-" + string(uid) }

// CloneSnapshotName is the VolumeSnapshot a snapshot clone for the
// DataVolume of UID uid makes of its source, in the source's namespace,
// deleted once the claim is made from it.
func CloneSnapshotName(uid types.UID) string { return "tmp-snapshot-" + string(uid) }
