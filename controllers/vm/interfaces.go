package vm

import (
	"context"
	"fmt"

	k8sv1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	virtv1 "kubevirt.io/api/core/v1"

	vmictl "github.com/virtkit/virtkit/controllers/vmi"
	"github.com/virtkit/virtkit/virt/spec"
)

// ReasonInterfacesHotplug is the reason of the VM's events, and of its
// failures, when the template's interfaces are hotplugged into or
// unplugged from the running VMI (KubeVirt's HotPlugNetworkInterfaceError
// names the failure).
const (
	ReasonInterfacesHotplug        = "InterfacesHotplug"
	ReasonInterfacesHotplugFailure = "HotPlugNetworkInterfaceError"
)

// syncInterfaces is KubeVirt's interface hotplug on the VM's side: the
// template's new bridge interfaces on secondary networks, and those it
// sets absent, are carried to the running VMI (spec.DeclaredInterfaces),
// whose handler plugs and unplugs the NICs and whose controller asks the
// cluster's Multus for the pod's interfaces; once an unplug is over the
// interface leaves the VMI and then the template
// (spec.UnpluggedFromTemplate), as in KubeVirt. The writes are guarded by
// resourceVersion; a conflict waits for the next event.
func (r *Reconciler) syncInterfaces(ctx context.Context, vm *virtv1.VirtualMachine, vmi *virtv1.VirtualMachineInstance) *SyncError {
	if vm.Spec.Template == nil || vm.DeletionTimestamp != nil {
		return nil
	}
	var cur *virtv1.VirtualMachineInstanceSpec
	var status []virtv1.VirtualMachineInstanceNetworkInterface
	if vmi != nil && !vmi.IsFinal() {
		if !vmi.IsRunning() || vmi.DeletionTimestamp != nil || vmictl.MigrationUnderway(vmi) {
			return nil // the VMI's next change brings the VM back
		}
		ifaces, nets, changed := spec.DeclaredInterfaces(&vm.Spec.Template.Spec, &vmi.Spec, vmi.Status.Interfaces)
		if changed {
			written, err := r.updateVMISpec(ctx, vmi, func(s *virtv1.VirtualMachineInstanceSpec) {
				s.Domain.Devices.Interfaces, s.Networks = ifaces, nets
			})
			if err != nil {
				return &SyncError{Reason: ReasonInterfacesHotplugFailure, Err: fmt.Errorf("hotplugging the template's interfaces into VirtualMachineInstance %s/%s: %w", vmi.Namespace, vmi.Name, err)}
			}
			if !written {
				return nil
			}
			r.recorder.Eventf(vm, k8sv1.EventTypeNormal, ReasonInterfacesHotplug, "Interfaces of virtual machine instance %s now as the template's: %d interfaces", vmi.Name, len(ifaces))
		}
		cur, status = &vmi.Spec, vmi.Status.Interfaces
	}
	ifaces, nets, changed := spec.UnpluggedFromTemplate(&vm.Spec.Template.Spec, cur, status)
	if !changed {
		return nil
	}
	upd := vm.DeepCopy()
	upd.Spec.Template.Spec.Domain.Devices.Interfaces, upd.Spec.Template.Spec.Networks = ifaces, nets
	// The status write that follows meets a newer VM and is tried again.
	if err := r.updateVM(ctx, upd); apierrors.IsConflict(err) {
		return nil
	} else if err != nil {
		return &SyncError{Reason: ReasonInterfacesHotplugFailure, Err: fmt.Errorf("removing unplugged interfaces from VirtualMachine %s/%s: %w", vm.Namespace, vm.Name, err)}
	}
	vm.ResourceVersion, vm.Spec = upd.ResourceVersion, upd.Spec
	return nil
}
