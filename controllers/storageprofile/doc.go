// Package storageprofile is the StorageProfile controller: for each
// StorageClass it keeps a cluster-scoped cdi.kubevirt.io/v1beta1
// StorageProfile of the same name, owned by the class, and writes its
// status as CDI's does: the class, its provisioner, and the claim property
// sets (access modes and volume mode) DataVolumes with spec.storage take
// what they do not say from: the spec's, else those known for the
// provisioner ([Capabilities]), and a Recognized condition saying which;
// the VolumeSnapshotClass that snapshots the class's volumes
// (status.snapshotClass) and how its claims are cloned
// (status.cloneStrategy, [CloneStrategy]), as CDI decides them.
//
// It changes no spec and no StorageClass. The DataVolume controller reads
// the status (controllers/datavolume, through dvspec.PickPropertySet).
//
// See docs/datavolumes.md.
package storageprofile
