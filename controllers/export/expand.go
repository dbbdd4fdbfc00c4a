package export

import (
	"context"
	"fmt"

	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/instancetypes"
	"github.com/virtkit/virtkit/virt/spec"
)

// SpecOptionsSource returns the virt/spec options in force (the cluster's
// architecture, machine type and defaults), with which an exported VM's
// instancetype and preference are written into its template.
type SpecOptionsSource func(ctx context.Context) ([]spec.Option, error)

// expanded is vm with its instancetype and preference written into its
// template (spec.ExpandVM), as KubeVirt's exported manifests carry it: the
// cluster the VM is recreated in may have neither. vm without either comes
// back as it is.
func (r *Reconciler) expanded(ctx context.Context, vm *virtv1.VirtualMachine) (*virtv1.VirtualMachine, error) {
	if vm.Spec.Instancetype == nil && vm.Spec.Preference == nil {
		return vm, nil
	}
	it, pref, err := instancetypes.Specs(ctx, r.client, vm)
	if err != nil {
		return nil, fmt.Errorf("VM %s/%s: %w", vm.Namespace, vm.Name, err)
	}
	var opts []spec.Option
	if r.specSource != nil {
		if opts, err = r.specSource(ctx); err != nil {
			return nil, fmt.Errorf("the cluster's settings: %w", err)
		}
	}
	out, errs := spec.ExpandVM(vm, it, pref, opts...)
	if len(errs) > 0 {
		return nil, fmt.Errorf("VM %s/%s: writing its instancetype and preference into its template: %w", vm.Namespace, vm.Name, errs.ToAggregate())
	}
	return out, nil
}
