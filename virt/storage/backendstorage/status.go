package backendstorage

import (
	virtv1 "kubevirt.io/api/core/v1"
)

// SetVolumeStatus makes st's status.volumeStatus name claim as the VMI's
// backend storage (the entry VolumeName, as KubeVirt's), replacing an
// entry that names another; it says whether st changed.
func SetVolumeStatus(st *virtv1.VirtualMachineInstanceStatus, claim string) bool {
	for i := range st.VolumeStatus {
		vs := &st.VolumeStatus[i]
		if vs.Name != VolumeName {
			continue
		}
		if vs.PersistentVolumeClaimInfo != nil && vs.PersistentVolumeClaimInfo.ClaimName == claim {
			return false
		}
		vs.PersistentVolumeClaimInfo = &virtv1.PersistentVolumeClaimInfo{ClaimName: claim}
		return true
	}
	st.VolumeStatus = append(st.VolumeStatus, virtv1.VolumeStatus{Name: VolumeName,
		PersistentVolumeClaimInfo: &virtv1.PersistentVolumeClaimInfo{ClaimName: claim}})
	return true
}

// ClaimName is the backend-storage claim st's status.volumeStatus names
// (KubeVirt's), "" when none.
func ClaimName(st *virtv1.VirtualMachineInstanceStatus) string {
	for _, vs := range st.VolumeStatus {
		if vs.Name == VolumeName && vs.PersistentVolumeClaimInfo != nil {
			return vs.PersistentVolumeClaimInfo.ClaimName
		}
	}
	return ""
}
