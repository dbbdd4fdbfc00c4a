// Package snapshot is what a KubeVirt VM snapshot and restore
// (snapshot.kubevirt.io/v1beta1) mean, as plain functions over API
// objects; the controllers in controllers/snapshot do what they say.
//
//   - [PlanVolumes]: which volumes of a VM a snapshot copies and how (a CSI
//     VolumeSnapshot of the claim behind a persistentVolumeClaim or
//     dataVolume volume, of the VolumeSnapshotClass [SnapshotClassFor]
//     picks), and which it leaves out, each with the reason
//     (containerDisk, hostDisk, cloud-init and other volumes hold no
//     claim). A claim whose class cannot be snapshotted is an error naming
//     the volume and the claim. A VM's backend-storage claim (EFI
//     variables, vTPM) is copied too, under KubeVirt's volume name for it,
//     or left out saying why.
//   - [Content] and [VolumeSnapshot]: the VirtualMachineSnapshotContent (the
//     VM's spec and a backup per claim) and the VolumeSnapshot of each
//     backup, with KubeVirt's names, labels and owners.
//   - [PlanRestore]: what a VirtualMachineRestore makes: a claim from each
//     backup's VolumeSnapshot (named as KubeVirt names them, or as the
//     restore's overrides and volume restore policy say), and the target
//     VM rewritten to use them; a new VM gets the restore's JSON patches.
//     It names the claim restored from the backend storage
//     (RestorePlan.StateClaim).
//   - [Indications], the condition helpers and the names in names.go:
//     KubeVirt's phases, conditions, indications, finalizers and
//     annotations, so that clients written for KubeVirt read them.
//
// It builds without cgo on any GOOS and touches no API server. See
// docs/snapshots.md.
package snapshot
