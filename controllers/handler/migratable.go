package handler

import (
	"fmt"
	"slices"

	k8sv1 "k8s.io/api/core/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/migrate"
)

// AllowPodBridgeMigrationAnnotation lets a VMI whose pod network uses the
// bridge binding migrate (KubeVirt's annotation of the same name).
const AllowPodBridgeMigrationAnnotation = "kubevirt.io/allow-pod-bridge-network-live-migration"

// liveMigratable is KubeVirt's LiveMigratable condition: true, or false with
// the first reason a migration would be refused.
func liveMigratable(vmi *virtv1.VirtualMachineInstance) virtv1.VirtualMachineInstanceCondition {
	c := virtv1.VirtualMachineInstanceCondition{Type: virtv1.VirtualMachineInstanceIsMigratable, Status: k8sv1.ConditionTrue}
	if reason, msg := notMigratable(vmi); reason != "" {
		c.Status, c.Reason, c.Message = k8sv1.ConditionFalse, reason, msg
	}
	return c
}

func notMigratable(vmi *virtv1.VirtualMachineInstance) (reason, message string) {
	if msg := volumesNotMigratable(vmi); msg != "" {
		return virtv1.VirtualMachineInstanceReasonDisksNotMigratable, msg
	}
	if _, ok := vmi.Annotations[AllowPodBridgeMigrationAnnotation]; !ok {
		pod := map[string]bool{}
		for _, n := range vmi.Spec.Networks {
			if n.Pod != nil {
				pod[n.Name] = true
			}
		}
		for _, iface := range vmi.Spec.Domain.Devices.Interfaces {
			if iface.Bridge != nil && pod[iface.Name] {
				return virtv1.VirtualMachineInstanceReasonInterfaceNotMigratable,
					"cannot migrate VMI which does not use masquerade, bridge with " + AllowPodBridgeMigrationAnnotation +
						" VM annotation or a migratable plugin to connect to the pod network"
			}
		}
	}
	d := vmi.Spec.Domain.Devices
	if len(d.HostDevices) > 0 || len(d.GPUs) > 0 {
		return virtv1.VirtualMachineInstanceReasonHostDeviceNotMigratable, "VMI uses a PCI host devices"
	}
	if len(d.Filesystems) > 0 {
		return virtv1.VirtualMachineInstanceReasonVirtIOFSNotMigratable, "VMI uses virtiofs"
	}
	for _, disk := range d.Disks {
		if disk.LUN != nil && disk.LUN.Reservation {
			return virtv1.VirtualMachineInstanceReasonPRNotMigratable, "VMI uses SCSI persistent reservation"
		}
	}
	if f := vmi.Spec.Domain.Features; f != nil && f.HypervPassthrough != nil && f.HypervPassthrough.Enabled != nil && *f.HypervPassthrough.Enabled {
		return virtv1.VirtualMachineInstanceReasonHypervPassthroughNotMigratable, "VMI uses hyperv passthrough"
	}
	return "", ""
}

// volumesNotMigratable says why a volume cannot follow the guest: a claim
// that is not ReadWriteMany (as its volumeStatus reports the claim; without
// that report, it is not known to be shared), or a host disk that is not
// shared. A hotplugged claim is one like any other: the migration brings
// it to the target pod with an attachment pod of its own.
//
// A volume its volume migration copies to a new claim (status.migratedVolumes)
// moves with the guest whatever its access modes.
func volumesNotMigratable(vmi *virtv1.VirtualMachineInstance) string {
	claims := map[string]*virtv1.PersistentVolumeClaimInfo{}
	for _, vs := range vmi.Status.VolumeStatus {
		claims[vs.Name] = vs.PersistentVolumeClaimInfo
	}
	copied := migrate.MigratedVolumes(vmi)
	for _, v := range vmi.Spec.Volumes {
		if copied[v.Name] {
			continue
		}
		if v.HostDisk != nil && (v.HostDisk.Shared == nil || !*v.HostDisk.Shared) {
			return "cannot migrate VMI with non-shared HostDisk"
		}
		claim := migrate.ClaimOf(&v)
		if claim == "" {
			continue
		}
		info := claims[v.Name]
		if info == nil || !slices.Contains(info.AccessModes, k8sv1.ReadWriteMany) {
			return fmt.Sprintf("cannot migrate VMI: PVC %v is not shared, live migration requires that all PVCs must be shared (using ReadWriteMany access mode)", claim)
		}
	}
	return ""
}

// migrationMethod is BlockMigration when a disk must be copied: it lives
// on the node (containerDisk, ephemeral and emptyDisk overlays and images)
// or its volume migration moves it to a new claim; LiveMigration otherwise.
// Cloud-init and config disks are made again on the target and do not count.
func migrationMethod(vmi *virtv1.VirtualMachineInstance) virtv1.VirtualMachineInstanceMigrationMethod {
	copied := migrate.MigratedVolumes(vmi)
	for _, v := range vmi.Spec.Volumes {
		if copiedDisk(v, copied) {
			return virtv1.BlockMigration
		}
	}
	return virtv1.LiveMigration
}

// copiedDisk reports whether a migration copies v's disk to the target:
// an image on the node, or a volume copied (by name in copied) to its new
// claim.
func copiedDisk(v virtv1.Volume, copied map[string]bool) bool {
	return v.ContainerDisk != nil || v.Ephemeral != nil || v.EmptyDisk != nil || copied[v.Name]
}

// localDisks are the guest devices (targets, "vda") of the disks a block
// migration copies: those whose images live on the node (containerDisk,
// ephemeral and emptyDisk overlays and images) and those a volume migration
// moves to new claims (what makes migrationMethod BlockMigration), found in
// the running domain's targets by volume name.
// Claims and shared hostDisks are on storage both nodes reach, and
// cloud-init and config disks are made again on the target: left to itself,
// libvirt would copy a claim's disk into the very file the target opened,
// and refuse a read-only config disk.
func localDisks(vmi *virtv1.VirtualMachineInstance, targets map[string]string) []string {
	var out []string
	copied := migrate.MigratedVolumes(vmi)
	for _, v := range vmi.Spec.Volumes {
		if dev, ok := targets[v.Name]; ok && copiedDisk(v, copied) {
			out = append(out, dev)
		}
	}
	slices.Sort(out)
	return out
}

// sharedVolume reports whether v is on storage both nodes of a migration
// reach: a claim (a migratable VMI's claims are ReadWriteMany) or a shared
// hostDisk.
func sharedVolume(v virtv1.Volume) bool {
	return v.PersistentVolumeClaim != nil || v.DataVolume != nil ||
		(v.HostDisk != nil && v.HostDisk.Shared != nil && *v.HostDisk.Shared)
}

// onSharedStorage reports whether a disk of vmi that the migration does not
// copy is on shared storage.
func onSharedStorage(vmi *virtv1.VirtualMachineInstance) bool {
	disks := map[string]bool{}
	for _, d := range vmi.Spec.Domain.Devices.Disks {
		disks[d.Name] = true
	}
	copied := migrate.MigratedVolumes(vmi)
	for _, v := range vmi.Spec.Volumes {
		if disks[v.Name] && sharedVolume(v) && !copied[v.Name] {
			return true
		}
	}
	return false
}
