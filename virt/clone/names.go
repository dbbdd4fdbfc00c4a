package clone

import (
	"crypto/sha256"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	clonev1 "kubevirt.io/api/clone/v1beta1"
)

// The kinds a clone reads and writes, and their groups.
const (
	VirtualMachineKind         = "VirtualMachine"
	VirtualMachineSnapshotKind = "VirtualMachineSnapshot"
	VirtualMachineGroup        = "kubevirt.io"
	SnapshotGroup              = "snapshot.kubevirt.io"
)

// Event reasons, KubeVirt's.
const (
	ReasonSnapshotCreated        = "SnapshotCreated"
	ReasonSnapshotReady          = "SnapshotReady"
	ReasonRestoreCreated         = "RestoreCreated"
	ReasonRestoreCreationFailed  = "RestoreCreationFailed"
	ReasonRestoreReady           = "RestoreReady"
	ReasonTargetVMCreated        = "TargetVMCreated"
	ReasonPVCBound               = "PVCBound"
	ReasonSnapshotDeleted        = "SnapshotDeleted"
	ReasonSnapshotContentInvalid = "SnapshotContentInvalid"
	ReasonSourceDoesNotExist     = "SourceDoesNotExist"
	// ReasonSnapshotFailed and ReasonRestoreFailed are virtkit's: a clone
	// whose snapshot or restore failed fails with it (KubeVirt's waits).
	ReasonSnapshotFailed = "SnapshotFailed"
	ReasonRestoreFailed  = "RestoreFailed"
	// ReasonTargetExists is virtkit's: a clone never writes over a VM
	// that was there before it.
	ReasonTargetExists = "TargetVMExists"
)

// SnapshotName is the name of the temporary snapshot a clone of a VM
// takes, as KubeVirt names it.
func SnapshotName(cloneUID types.UID) string { return fmt.Sprintf("tmp-snapshot-%s", cloneUID) }

// RestoreName is the name of the restore a clone makes, as KubeVirt names
// it.
func RestoreName(cloneUID types.UID) string { return fmt.Sprintf("tmp-restore-%s", cloneUID) }

// maxVMName is the longest VM name: a VM's name is a label value of its
// VMI and launcher pod.
const maxVMName = 63

// TargetName is the name a clone of source gets when its spec names no
// target: clone-SOURCE-SUFFIX, as KubeVirt's webhook names it, with SOURCE
// shortened so that the name stays a valid VM name.
func TargetName(source, suffix string) string {
	if room := maxVMName - len("clone--") - len(suffix); len(source) > room {
		source = source[:room]
	}
	return fmt.Sprintf("clone-%s-%s", source, suffix)
}

// suffixAlphabet is the alphabet of generated name suffixes (no vowels,
// no look-alike characters), as Kubernetes' generated names use.
const suffixAlphabet = "bcdfghjklmnpqrstvwxz2456789"

// SuffixOf is a 5-character name suffix derived from seed: the target
// name the controller gives a clone the webhook did not default.
func SuffixOf(seed string) string {
	sum := sha256.Sum256([]byte(seed))
	out := make([]byte, 5)
	for i := range out {
		out[i] = suffixAlphabet[int(sum[i])%len(suffixAlphabet)]
	}
	return string(out)
}

// OwnerReference makes c the controlling owner of what it creates: its
// snapshot and restore go with it.
func OwnerReference(c *clonev1.VirtualMachineClone) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: clonev1.SchemeGroupVersion.String(), Kind: "VirtualMachineClone",
		Name: c.Name, UID: c.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
}

// OwnerOf is the name of the clone that controls obj, "" when none does.
func OwnerOf(obj metav1.Object) string {
	for _, o := range obj.GetOwnerReferences() {
		if o.Kind == "VirtualMachineClone" && o.APIVersion == clonev1.SchemeGroupVersion.String() {
			return o.Name
		}
	}
	return ""
}
