package admission

import (
	"fmt"

	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/migrate"
	"github.com/virtkit/virtkit/virt/spec"
)

// liveChanges checks a change virtkit's own components make to a running
// VMI's spec: a hotplugged PersistentVolumeClaim or DataVolume added or
// removed with its disk (the addvolume and removevolume verbs), the
// termination grace period (a forced stop), interfaces hotplugged and
// unplugged (liveInterfaces), and what the VM controller
// carries over under KubeVirt's LiveUpdate rollout strategy (CPU sockets
// and guest memory within maxSockets and maxGuest, their CPU and memory
// resources, the node selector, affinity and tolerations). Anything else, and any change
// to a volume or disk that was not hotplugged, is refused with its field,
// except a volume migration's: a volume the VMI's status.migratedVolumes
// (migrating) lists may move to its destination claim, or back to its
// source claim.
func liveChanges(old, upd *virtv1.VirtualMachineInstanceSpec, migrating []virtv1.StorageMigratedVolumeInfo) field.ErrorList {
	sp := field.NewPath("spec")
	rest, oldRest := upd.DeepCopy(), old.DeepCopy()
	for _, s := range []*virtv1.VirtualMachineInstanceSpec{rest, oldRest} {
		s.Volumes, s.Domain.Devices.Disks, s.TerminationGracePeriodSeconds = nil, nil, nil
		// Interface hotplug: liveInterfaces judges these.
		s.Domain.Devices.Interfaces, s.Networks = nil, nil
		// LiveUpdate: the VM controller carries these over from the VM.
		s.NodeSelector, s.Affinity, s.Tolerations = nil, nil, nil
		if s.Domain.CPU != nil {
			s.Domain.CPU.Sockets = 0
		}
		if s.Domain.Memory != nil {
			s.Domain.Memory.Guest = nil
		}
		for _, l := range []k8sv1.ResourceList{s.Domain.Resources.Requests, s.Domain.Resources.Limits} {
			delete(l, k8sv1.ResourceCPU)
			delete(l, k8sv1.ResourceMemory)
		}
	}
	var errs field.ErrorList
	if !equality.Semantic.DeepEqual(rest, oldRest) {
		errs = append(errs, field.Forbidden(sp, "only hotplugged volumes and interfaces, the termination grace period, CPU sockets, guest memory, their resources, node selector, affinity and tolerations of a running VirtualMachineInstance may change"))
	}
	errs = append(errs, liveResources(old, upd)...)
	errs = append(errs, liveInterfaces(old, upd)...)

	vp := sp.Child("volumes")
	was := map[string]virtv1.Volume{}
	for _, v := range old.Volumes {
		was[v.Name] = v
	}
	now := map[string]bool{}
	added := map[string]bool{}
	for i, v := range upd.Volumes {
		now[v.Name] = true
		prev, ok := was[v.Name]
		switch {
		case !ok && !spec.Hotpluggable(&v):
			errs = append(errs, field.Forbidden(vp.Index(i), "a volume added to a running VirtualMachineInstance must be a hotpluggable persistentVolumeClaim or dataVolume"))
		case !ok:
			added[v.Name] = true
		case !equality.Semantic.DeepEqual(prev, v) && !claimMigrated(prev, v, migrating):
			errs = append(errs, field.Forbidden(vp.Index(i), "a volume of a running VirtualMachineInstance cannot change, except to the claim its volume migration (status.migratedVolumes) names"))
		}
	}
	for _, v := range old.Volumes {
		if !now[v.Name] && !spec.Hotpluggable(&v) {
			errs = append(errs, field.Forbidden(vp, "volume "+v.Name+" was not hotplugged and cannot be removed from a running VirtualMachineInstance"))
		}
	}

	dp := sp.Child("domain", "devices", "disks")
	wasDisk := map[string]virtv1.Disk{}
	for _, d := range old.Domain.Devices.Disks {
		wasDisk[d.Name] = d
	}
	nowDisk := map[string]bool{}
	for i, d := range upd.Domain.Devices.Disks {
		nowDisk[d.Name] = true
		prev, ok := wasDisk[d.Name]
		switch {
		case !ok && !added[d.Name]:
			errs = append(errs, field.Forbidden(dp.Index(i), "a disk added to a running VirtualMachineInstance must be the disk of a hotplugged volume added with it"))
		case ok && !equality.Semantic.DeepEqual(prev, d):
			errs = append(errs, field.Forbidden(dp.Index(i), "a disk of a running VirtualMachineInstance cannot change"))
		}
	}
	for _, d := range old.Domain.Devices.Disks {
		if v, ok := was[d.Name]; !nowDisk[d.Name] && (!ok || now[d.Name] || !spec.Hotpluggable(&v)) {
			errs = append(errs, field.Forbidden(dp, "disk "+d.Name+" can be removed only with its hotplugged volume"))
		}
	}
	return errs
}

// claimMigrated reports whether the change of a volume from prev to next is
// a volume migration's: the claim's name is all that changes, next is not
// hotpluggable, and migrating lists the volume with prev's and next's claims
// at its two ends.
func claimMigrated(prev, next virtv1.Volume, migrating []virtv1.StorageMigratedVolumeInfo) bool {
	from, to := migrate.ClaimOf(&prev), migrate.ClaimOf(&next)
	if from == "" || to == "" || spec.Hotpluggable(&next) {
		return false
	}
	renamed := *prev.DeepCopy()
	switch {
	case renamed.PersistentVolumeClaim != nil:
		renamed.PersistentVolumeClaim.ClaimName = to
	case renamed.DataVolume != nil:
		renamed.DataVolume.Name = to
	}
	if !equality.Semantic.DeepEqual(renamed, next) {
		return false
	}
	for _, m := range migrating {
		if m.VolumeName != next.Name || m.SourcePVCInfo == nil || m.DestinationPVCInfo == nil {
			continue
		}
		src, dst := m.SourcePVCInfo.ClaimName, m.DestinationPVCInfo.ClaimName
		return (from == src && to == dst) || (from == dst && to == src)
	}
	return false
}

// liveResources checks a LiveUpdate of a running VMI's CPU sockets and
// guest memory: they only grow (KubeVirt restarts a VM to shrink them),
// within the maxSockets and maxGuest the VMI started with.
func liveResources(old, upd *virtv1.VirtualMachineInstanceSpec) field.ErrorList {
	var errs field.ErrorList
	if oc, nc := old.Domain.CPU, upd.Domain.CPU; oc != nil && nc != nil && oc.Sockets != nc.Sockets {
		p := field.NewPath("spec", "domain", "cpu", "sockets")
		switch {
		case oc.MaxSockets == 0:
			errs = append(errs, field.Forbidden(p, "can change on a running VirtualMachineInstance only with maxSockets set"))
		case nc.Sockets < oc.Sockets:
			errs = append(errs, field.Invalid(p, nc.Sockets, fmt.Sprintf("cannot go below %d on a running VirtualMachineInstance", oc.Sockets)))
		case nc.Sockets > oc.MaxSockets:
			errs = append(errs, field.Invalid(p, nc.Sockets, fmt.Sprintf("must be less than or equal to maxSockets %d", oc.MaxSockets)))
		}
	}
	om, nm := old.Domain.Memory, upd.Domain.Memory
	var og, ng *resource.Quantity
	if om != nil {
		og = om.Guest
	}
	if nm != nil {
		ng = nm.Guest
	}
	if (og == nil) != (ng == nil) || og != nil && og.Cmp(*ng) != 0 {
		p := field.NewPath("spec", "domain", "memory", "guest")
		switch {
		case og == nil || ng == nil || om.MaxGuest == nil:
			errs = append(errs, field.Forbidden(p, "can change on a running VirtualMachineInstance only with maxGuest set"))
		case ng.Cmp(*om.MaxGuest) > 0:
			errs = append(errs, field.Invalid(p, ng.String(), "must be less than or equal to maxGuest "+om.MaxGuest.String()))
		}
	}
	return errs
}
