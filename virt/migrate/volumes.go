package migrate

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/spec"
)

// InvalidVolumeRevert is KubeVirt's message for a VM whose volumes change
// again while a volume migration runs, to anything but the claims it
// started from.
const InvalidVolumeRevert = "The volume can only be reverted to the previous version during the update"

// ClaimOf is the claim a persistentVolumeClaim or dataVolume volume uses
// (a DataVolume's claim has its name), "" for any other source.
func ClaimOf(v *virtv1.Volume) string {
	switch {
	case v.PersistentVolumeClaim != nil:
		return v.PersistentVolumeClaim.ClaimName
	case v.DataVolume != nil:
		return v.DataVolume.Name
	}
	return ""
}

// ChangedClaims maps each volume that uses a claim in both want and have,
// under another claim in want, to want's claim: what a VM's template asks
// of a running VMI's volumes.
func ChangedClaims(want, have []virtv1.Volume) map[string]string {
	had := map[string]string{}
	for i := range have {
		if c := ClaimOf(&have[i]); c != "" {
			had[have[i].Name] = c
		}
	}
	out := map[string]string{}
	for i := range want {
		c := ClaimOf(&want[i])
		if old, ok := had[want[i].Name]; ok && c != "" && c != old {
			out[want[i].Name] = c
		}
	}
	return out
}

// MigratedVolumes returns the volumes a VMI's status.migratedVolumes names:
// those a migration copies into their destination claims.
func MigratedVolumes(vmi *virtv1.VirtualMachineInstance) map[string]bool {
	out := map[string]bool{}
	for _, m := range vmi.Status.MigratedVolumes {
		out[m.VolumeName] = true
	}
	return out
}

// VolumesReady reports whether vmi's spec names, for every volume its
// status.migratedVolumes lists, the destination claim: the VM controller
// writes the list first and the spec second, and a migration (whose target
// pod mounts the claims the spec names) must not begin in between.
func VolumesReady(vmi *virtv1.VirtualMachineInstance) bool {
	claims := map[string]string{}
	for i := range vmi.Spec.Volumes {
		claims[vmi.Spec.Volumes[i].Name] = ClaimOf(&vmi.Spec.Volumes[i])
	}
	for _, m := range vmi.Status.MigratedVolumes {
		if m.DestinationPVCInfo == nil || claims[m.VolumeName] != m.DestinationPVCInfo.ClaimName {
			return false
		}
	}
	return true
}

// VolumesChanging reports whether a volume migration of vmi is asked for
// and not yet done: its VolumesChange condition is True.
func VolumesChanging(vmi *virtv1.VirtualMachineInstance) bool {
	c := volumesChange(vmi)
	return c != nil && c.Status == corev1.ConditionTrue
}

// volumesChange is vmi's VolumesChange condition, nil for none.
func volumesChange(vmi *virtv1.VirtualMachineInstance) *virtv1.VirtualMachineInstanceCondition {
	for i, c := range vmi.Status.Conditions {
		if c.Type == virtv1.VirtualMachineInstanceVolumesChange {
			return &vmi.Status.Conditions[i]
		}
	}
	return nil
}

// VolumeUpdate is what a VM controller does about a running VMI whose VM
// points some volumes at other claims, under KubeVirt's
// updateVolumesStrategy: Migration. The zero value does nothing.
type VolumeUpdate struct {
	// Start: write Migrated to the VMI's status.migratedVolumes with the
	// VolumesChange condition True, then Volumes to its spec.volumes.
	// A migration then copies each disk into its new claim.
	Start bool
	// Cancel: the VM went back to the claims the migration started from
	// before it ended. Write Volumes to the VMI's spec, clear its
	// migratedVolumes and set VolumesChange False, reason
	// VolumesChangeCancellation.
	Cancel bool
	// Migrated is the VMI's status.migratedVolumes when starting.
	Migrated []virtv1.StorageMigratedVolumeInfo
	// Volumes is the VMI's spec.volumes to write.
	Volumes []virtv1.Volume
	// Refused says why the VM's change cannot be made by a migration,
	// field by field (of the VM); the VM reports it and waits for a restart.
	Refused field.ErrorList
	// Missing names a destination claim that does not exist: the VMI's
	// VolumesChange condition is False with it until the claim appears.
	Missing string
}

// PlanVolumeUpdate decides, as KubeVirt's VM controller does, what to do
// about vm's template asking other claims of its running vmi. claims are
// the namespace's claims by name (those the template and the VMI name; a
// claim absent from it does not exist).
//
// A change during a volume migration must return every migrated volume to
// its source claim (a cancellation) or it is an error (KubeVirt's
// InvalidVolumeRevert). A new change is refused for a hotplugged, shareable
// or LUN disk and for a filesystem, and for a VMI whose other
// ReadWriteOnce claims would stay behind.
func PlanVolumeUpdate(vm *virtv1.VirtualMachine, vmi *virtv1.VirtualMachineInstance, claims map[string]*corev1.PersistentVolumeClaim) (VolumeUpdate, error) {
	if vm.Spec.Template == nil || vmi == nil || vmi.DeletionTimestamp != nil || vmi.IsFinal() {
		return VolumeUpdate{}, nil
	}
	want := vm.Spec.Template.Spec.Volumes
	changed := ChangedClaims(want, vmi.Spec.Volumes)
	if len(changed) == 0 && len(vmi.Status.MigratedVolumes) > 0 && volumesChange(vmi) == nil && VolumesReady(vmi) {
		// Started and not asked for yet (the VM controller stopped
		// between its writes): ask for it.
		return VolumeUpdate{Start: true, Migrated: vmi.Status.MigratedVolumes, Volumes: vmi.Spec.Volumes}, nil
	}
	// A migration copying claims moves the VMI to its copies, and points
	// the VM at them once it succeeds: not a change of the VM's.
	for i := range vmi.Spec.Volumes {
		v := &vmi.Spec.Volumes[i]
		if to, ok := changed[v.Name]; ok {
			if c := claims[ClaimOf(v)]; c != nil && c.Annotations[CopyOfAnnotation] == to {
				delete(changed, v.Name)
			}
		}
	}
	if len(changed) == 0 {
		return VolumeUpdate{}, nil
	}
	if len(vmi.Status.MigratedVolumes) > 0 && VolumesChanging(vmi) {
		if len(changed) == 0 {
			return VolumeUpdate{}, nil
		}
		for _, m := range vmi.Status.MigratedVolumes {
			if m.SourcePVCInfo == nil || changed[m.VolumeName] != m.SourcePVCInfo.ClaimName {
				return VolumeUpdate{}, fmt.Errorf("%s", InvalidVolumeRevert)
			}
			delete(changed, m.VolumeName)
		}
		if len(changed) > 0 {
			return VolumeUpdate{}, fmt.Errorf("%s", InvalidVolumeRevert)
		}
		return VolumeUpdate{Cancel: true, Volumes: withClaims(vmi.Spec.Volumes, want, MigratedVolumes(vmi))}, nil
	}
	if len(changed) == 0 || vm.Spec.UpdateVolumesStrategy == nil || *vm.Spec.UpdateVolumesStrategy != virtv1.UpdateVolumesStrategyMigration {
		return VolumeUpdate{}, nil
	}

	vp := field.NewPath("spec", "template", "spec", "volumes")
	for _, c := range vmi.Status.Conditions {
		if c.Type == virtv1.VirtualMachineInstanceIsMigratable && c.Status == corev1.ConditionFalse &&
			c.Reason != virtv1.VirtualMachineInstanceReasonDisksNotMigratable {
			return VolumeUpdate{Refused: field.ErrorList{field.Forbidden(vp,
				fmt.Sprintf("cannot migrate the volumes as the VMI isn't migratable: %s: %s", c.Reason, c.Message))}}, nil
		}
	}
	disks := map[string]virtv1.Disk{}
	for _, d := range vmi.Spec.Domain.Devices.Disks {
		disks[d.Name] = d
	}
	filesystems := map[string]bool{}
	for _, f := range vmi.Spec.Domain.Devices.Filesystems {
		filesystems[f.Name] = true
	}
	was := map[string]string{}
	for i := range vmi.Spec.Volumes {
		was[vmi.Spec.Volumes[i].Name] = ClaimOf(&vmi.Spec.Volumes[i])
	}
	var u VolumeUpdate
	names := map[string]bool{}
	for i := range want {
		v := &want[i]
		claim, ok := changed[v.Name]
		if !ok {
			continue
		}
		names[v.Name] = true
		d, isDisk := disks[v.Name]
		switch {
		case spec.Hotpluggable(v):
			u.Refused = append(u.Refused, field.Forbidden(vp.Index(i), "a hotplugged volume cannot be migrated to another claim"))
			continue
		case filesystems[v.Name]:
			u.Refused = append(u.Refused, field.Forbidden(vp.Index(i), "a filesystem (virtiofs) volume cannot be migrated to another claim"))
			continue
		case isDisk && d.Shareable != nil && *d.Shareable:
			u.Refused = append(u.Refused, field.Forbidden(vp.Index(i), "a shareable disk cannot be migrated to another claim"))
			continue
		case isDisk && d.LUN != nil:
			u.Refused = append(u.Refused, field.Forbidden(vp.Index(i), "a LUN disk cannot be migrated to another claim"))
			continue
		}
		dst, src := claims[claim], claims[was[v.Name]]
		if dst == nil {
			if u.Missing == "" {
				u.Missing = claim
			}
			continue
		}
		u.Migrated = append(u.Migrated, virtv1.StorageMigratedVolumeInfo{
			VolumeName:         v.Name,
			SourcePVCInfo:      ClaimInfo(was[v.Name], src),
			DestinationPVCInfo: ClaimInfo(claim, dst),
		})
	}
	if len(u.Refused) > 0 || u.Missing != "" {
		u.Migrated = nil
		return u, nil
	}
	// A claim left behind must be one the target reaches too.
	for _, vs := range vmi.Status.VolumeStatus {
		if c := vs.PersistentVolumeClaimInfo; c != nil && !names[vs.Name] &&
			slices.Contains(c.AccessModes, corev1.ReadWriteOnce) && !slices.Contains(c.AccessModes, corev1.ReadWriteMany) {
			u.Refused = append(u.Refused, field.Forbidden(vp, fmt.Sprintf("cannot migrate the VM: the volume %s is ReadWriteOnce and not included in the migrated volumes", vs.Name)))
		}
	}
	if len(u.Refused) > 0 {
		u.Migrated = nil
		return u, nil
	}
	u.Start = true
	u.Volumes = withClaims(vmi.Spec.Volumes, want, names)
	return u, nil
}

// withClaims returns have with each volume of names as want has it.
func withClaims(have, want []virtv1.Volume, names map[string]bool) []virtv1.Volume {
	byName := map[string]virtv1.Volume{}
	for _, v := range want {
		byName[v.Name] = v
	}
	out := make([]virtv1.Volume, len(have))
	for i, v := range have {
		out[i] = *v.DeepCopy()
		if w, ok := byName[v.Name]; ok && names[v.Name] {
			out[i] = *w.DeepCopy()
		}
	}
	return out
}

// ClaimInfo is claim name (pvc, or nil when it is missing) as KubeVirt
// reports a claim in a VMI's volumeStatus and migratedVolumes.
func ClaimInfo(name string, pvc *corev1.PersistentVolumeClaim) *virtv1.PersistentVolumeClaimInfo {
	info := &virtv1.PersistentVolumeClaimInfo{ClaimName: name}
	if pvc == nil {
		return info
	}
	info.AccessModes = slices.Clone(pvc.Spec.AccessModes)
	info.VolumeMode = pvc.Spec.VolumeMode
	info.Requests = pvc.Spec.Resources.Requests.DeepCopy()
	info.Capacity = pvc.Status.Capacity.DeepCopy()
	return info
}
