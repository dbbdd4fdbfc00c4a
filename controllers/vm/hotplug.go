package vm

import (
	"context"
	"fmt"

	k8sv1 "k8s.io/api/core/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/spec"
)

// ReasonVolumesHotplug is the reason of the VM's events when its template's
// hotplugged volumes are carried to the running VMI.
const ReasonVolumesHotplug = "VolumesHotplug"

// ReasonLiveUpdate is the reason of events and failures of carrying a
// template's live-updatable fields over to its running VMI.
const ReasonLiveUpdate = "LiveUpdate"

// syncDeclaredHotplug carries the hotpluggable volumes of vm's template to
// its running VMI, and takes those the template dropped out of it, as
// KubeVirt's declarative volume hotplug does (spec.DeclaredHotplug): adding
// one to the template (kubectl, or virt-api's addvolume) hotplugs it. Not
// while a volume migration is what the template's claims ask for
// (updateVolumesStrategy Migration). The write is guarded by the VMI's
// resourceVersion; the handler then plugs or unplugs the disks.
func (r *Reconciler) syncDeclaredHotplug(ctx context.Context, vm *virtv1.VirtualMachine, vmi *virtv1.VirtualMachineInstance) *SyncError {
	if vmi == nil || vm.Spec.Template == nil || !vmi.IsRunning() || vmi.DeletionTimestamp != nil {
		return nil
	}
	if s := vm.Spec.UpdateVolumesStrategy; s != nil && *s == virtv1.UpdateVolumesStrategyMigration {
		return nil
	}
	vols, disks, changed := spec.DeclaredHotplug(&vm.Spec.Template.Spec, &vmi.Spec, vmi.Status.VolumeStatus)
	if !changed {
		return nil
	}
	written, err := r.updateVMISpec(ctx, vmi, func(s *virtv1.VirtualMachineInstanceSpec) {
		s.Volumes, s.Domain.Devices.Disks = vols, disks
	})
	if err != nil {
		return &SyncError{Reason: ReasonVolumesHotplug, Err: fmt.Errorf("hotplugging the template's volumes into VirtualMachineInstance %s/%s: %w", vmi.Namespace, vmi.Name, err)}
	}
	if written {
		r.recorder.Eventf(vm, k8sv1.EventTypeNormal, ReasonVolumesHotplug, "Hotplugged volumes of virtual machine instance %s now as the template's: %d volumes, %d disks", vmi.Name, len(vols), len(disks))
	}
	return nil
}
