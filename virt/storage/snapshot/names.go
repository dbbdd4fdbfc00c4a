package snapshot

import (
	"fmt"

	"k8s.io/apimachinery/pkg/types"
)

// KubeVirt's finalizers, labels and annotations on snapshots, their
// contents, restores, VMs and the objects made for them.
const (
	// SnapshotFinalizer keeps a VirtualMachineSnapshot until its content
	// is dealt with per its deletion policy and its VM unlocked.
	SnapshotFinalizer = "snapshot.kubevirt.io/vmsnapshot-protection"
	// ContentFinalizer keeps a VirtualMachineSnapshotContent while its
	// snapshot is being taken.
	ContentFinalizer = "snapshot.kubevirt.io/vmsnapshotcontent-protection"
	// SourceFinalizer keeps a VM while a snapshot of it is in progress
	// (with status.snapshotInProgress naming the snapshot).
	SourceFinalizer = "snapshot.kubevirt.io/snapshot-source-protection"
	// RestoreFinalizer keeps a VirtualMachineRestore while it runs.
	RestoreFinalizer = "snapshot.kubevirt.io/vmrestore-protection"

	// SourceNameLabel and SourceNamespaceLabel name, on a VolumeSnapshot,
	// the VM it was taken of.
	SourceNameLabel      = "snapshot.kubevirt.io/source-vm-name"
	SourceNamespaceLabel = "snapshot.kubevirt.io/source-vm-namespace"

	// RestoreNameAnnotation names, on a restored claim, its restore.
	RestoreNameAnnotation = "restore.kubevirt.io/name"
	// LastRestoreAnnotation records, on a VM, the UID of the last restore
	// written to it.
	LastRestoreAnnotation = "restore.kubevirt.io/lastRestoreUID"
)

// ContentName is the name of a snapshot's VirtualMachineSnapshotContent.
func ContentName(snapshotUID types.UID) string {
	return fmt.Sprintf("vmsnapshot-content-%s", snapshotUID)
}

// VolumeSnapshotName is the name of the VolumeSnapshot of a snapshot's
// volume.
func VolumeSnapshotName(snapshotUID types.UID, volume string) string {
	return fmt.Sprintf("vmsnapshot-%s-volume-%s", snapshotUID, volume)
}

// defaultRestoreClaimName is the name, with the RandomizeNames policy, of
// the claim a restore makes for a volume.
func defaultRestoreClaimName(restoreUID types.UID, volume string) string {
	return fmt.Sprintf("restore-%s-%s", restoreUID, volume)
}
