package snapshot

import (
	volumesnapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	vmsnapshotv1 "kubevirt.io/api/snapshot/v1beta1"
)

// VolumeSnapshotKind is the kind of a CSI VolumeSnapshot, as a claim's data
// source names it.
const VolumeSnapshotKind = "VolumeSnapshot"

// VolumeSnapshotReady says whether the CSI snapshot s can be restored: its
// status says readyToUse.
func VolumeSnapshotReady(s *volumesnapshotv1.VolumeSnapshot) bool {
	return s.Status != nil && ptr.Deref(s.Status.ReadyToUse, false)
}

// Ready says whether the VM snapshot s can be used (restored, exported,
// cloned from): its status says readyToUse and names its content.
func Ready(s *vmsnapshotv1.VirtualMachineSnapshot) bool {
	return s.Status != nil && ptr.Deref(s.Status.ReadyToUse, false) && s.Status.VirtualMachineSnapshotContentName != nil
}

// VolumeSnapshotSource is a claim's data source naming the CSI snapshot
// name of the claim's namespace.
func VolumeSnapshotSource(name string) corev1.TypedLocalObjectReference {
	group := volumesnapshotv1.GroupName
	return corev1.TypedLocalObjectReference{APIGroup: &group, Kind: VolumeSnapshotKind, Name: name}
}

// RestoresVolumeSnapshot says whether ds names a CSI snapshot.
func RestoresVolumeSnapshot(ds *corev1.TypedLocalObjectReference) bool {
	return ds != nil && ds.Kind == VolumeSnapshotKind && ptr.Deref(ds.APIGroup, "") == volumesnapshotv1.GroupName
}
