// Package datavolume is the DataVolume controller: it fills a
// PersistentVolumeClaim with a disk image as CDI's controllers do for a
// cdi.kubevirt.io/v1beta1 DataVolume, so that KubeVirt manifests with
// DataVolumes (and VMs' dataVolumeTemplates) work unchanged.
//
// It owns:
//   - the claim: made from the DataVolume's spec.pvc, or from spec.storage
//     with the file system's overhead added (CDI's rule), named as the
//     DataVolume and controlled by it, so that deleting the DataVolume
//     deletes the claim; a claim of that name it does not control is left
//     alone and reported (ErrResourceExists);
//   - the importer pod: virt-importer (daemons/virt-importer, the library
//     virt/storage/importer) with the claim mounted, restarted with the
//     kubelet's back-off while its source cannot be reached, deleted once
//     it has finished;
//   - the DataVolume's status as CDI reports it: phases Pending,
//     ImportScheduled, ImportInProgress, Succeeded and Failed,
//     status.progress, restartCount, claimName, the Bound, Running and
//     Ready conditions, and CDI's event reasons.
//
// A clone within a namespace is made by the storage itself where the
// StorageProfile of the claim's class says csi-clone or snapshot and the
// storage can (dvspec.ChooseClone): the claim names its source claim, or a
// VolumeSnapshot of it the controller makes and deletes, as its data
// source, and no pod runs; the phases are CDI's CSICloneInProgress,
// SnapshotForSmartCloneInProgress and CloneFromSnapshotSourceInProgress.
//
// Which sources it reads and how the claim is sized is
// virt/storage/dvspec's, shared with virt-api's webhook: http (with a CA
// bundle, basic auth, extra headers and a checksum), registry (a
// containerDisk image the node pulls for the importer pod), pvc (a clone of
// a claim, once no running pod uses it), snapshot (a VolumeSnapshot of the
// same namespace, restored by its driver), upload and blank.
// Anything else is refused with the field named: the DataVolume is Failed.
//
// The pure part (ImporterPod, NextStatus) is exported so
// that it can be read and reused; Reconciler wires it to the API. The
// contract with the importer (its flags, mounts and termination message)
// lives in virt/storage/importer/contract.
//
// See docs/datavolumes.md.
package datavolume
