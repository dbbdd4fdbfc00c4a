package vm

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	virtv1 "kubevirt.io/api/core/v1"
)

// updateVMISpec writes vmi's spec as change leaves a copy of it, guarded by
// vmi's resourceVersion, and on success takes the new spec and
// resourceVersion into vmi. A conflict is no error and writes nothing (it
// reports false): the VMI changed meanwhile, and its event brings the VM
// back to judge the change again.
func (r *Reconciler) updateVMISpec(ctx context.Context, vmi *virtv1.VirtualMachineInstance, change func(*virtv1.VirtualMachineInstanceSpec)) (bool, error) {
	upd := vmi.DeepCopy()
	change(&upd.Spec)
	if err := r.client.Update(ctx, upd); apierrors.IsConflict(err) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	vmi.ResourceVersion, vmi.Spec = upd.ResourceVersion, upd.Spec
	return true, nil
}
