package snapshot

import (
	"fmt"

	virtv1 "kubevirt.io/api/core/v1"
)

// VolumeSnapshotStatuses are a VM's status.volumeSnapshotStatuses, as
// KubeVirt reports them: for each volume of its template, in order,
// whether a snapshot can copy it, and if not why, in KubeVirt's words. A
// volume holding no claim cannot be copied; a claim's volume can when the
// claim exists and a VolumeSnapshotClass serves its StorageClass
// ([SnapshotClassFor]). A VM with backend storage has one more entry, for
// its backend-storage claim once it exists (see [PlanVolumes]).
func VolumeSnapshotStatuses(vm *virtv1.VirtualMachine, f Facts) []virtv1.VolumeSnapshotStatus {
	if vm.Spec.Template == nil {
		return nil
	}
	var out []virtv1.VolumeSnapshotStatus
	for _, v := range vm.Spec.Template.Spec.Volumes {
		out = append(out, volumeSnapshotStatus(v, f))
	}
	if state, _ := stateVolume(vm, f); state != nil {
		out = append(out, volumeSnapshotStatus(*state, f))
	}
	return out
}

func volumeSnapshotStatus(v virtv1.Volume, f Facts) virtv1.VolumeSnapshotStatus {
	off := func(format string, args ...any) virtv1.VolumeSnapshotStatus {
		return virtv1.VolumeSnapshotStatus{Name: v.Name, Reason: fmt.Sprintf(format, args...)}
	}
	claim := ClaimOf(v)
	if claim == "" {
		return off("Snapshot is not supported for this volumeSource type [%s]", v.Name)
	}
	pvc, ok := f.Claims[claim]
	if !ok {
		return off("PVC not found")
	}
	class := ""
	if pvc.Spec.StorageClassName != nil {
		class = *pvc.Spec.StorageClassName
	}
	if sc, ok := f.StorageClasses[class]; !ok || !hasDriver(f, sc.Provisioner) {
		return off("No VolumeSnapshotClass: Volume snapshots are not configured for this StorageClass [%s] [%s]", class, v.Name)
	}
	if _, err := SnapshotClassFor(class, f); err != nil {
		return off("%v", err)
	}
	return virtv1.VolumeSnapshotStatus{Name: v.Name, Enabled: true}
}

// hasDriver says whether some VolumeSnapshotClass serves driver.
func hasDriver(f Facts, driver string) bool {
	for _, c := range f.SnapshotClasses {
		if c.Driver == driver {
			return true
		}
	}
	return false
}
