// Package snapshot holds virt-controller's VM snapshot and restore
// controllers (snapshot.kubevirt.io/v1beta1), which do what the plans of
// virt/storage/snapshot say:
//
//   - [SnapshotReconciler] takes a VirtualMachineSnapshot: it locks the VM
//     (status.snapshotInProgress and a finalizer, as KubeVirt), makes the
//     VirtualMachineSnapshotContent and a CSI VolumeSnapshot per claim,
//     reports KubeVirt's phases (InProgress, Succeeded, Failed),
//     conditions (Progressing, Ready, Failure), indications and
//     readyToUse, fails at the failureDeadline, and on deletion deletes
//     the content (and so its VolumeSnapshots) unless the deletion policy
//     is Retain.
//   - [RestoreReconciler] takes a VirtualMachineRestore: it makes a claim
//     from each VolumeSnapshot of the snapshot's content, then writes the
//     target VM (the snapshot's VM, or a new one with the restore's
//     patches) pointed at them, owning them, and reports complete. A
//     claim restored from the VM's backend storage becomes the target
//     VM's backend-storage claim (labelled and controlled by it), and the
//     one it had is deleted; a clone's restore leaves it out.
//
// A restore that fails, or is deleted before it completes, deletes the
// claims it made. A restore never writes a running VM: the webhook refuses one, and the
// controller fails the restore if the VM started meanwhile (or stops it
// first, with targetReadinessPolicy StopTarget). Freezing a running
// guest's file systems needs the QEMU guest agent; without one a snapshot
// of a running VM says NoGuestAgent and is crash-consistent.
package snapshot
