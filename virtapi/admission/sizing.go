package admission

import (
	"context"

	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/virt/instancetypes"
	"github.com/virtkit/virtkit/virt/spec"
)

// WithInstancetypes has the validator read, through r, the instancetype and
// preference a VirtualMachine names and check its template against them,
// and the mutating webhook of the same Handlers resolve inferFromVolume
// matchers from the volume's claim, as KubeVirt's VM admission does: a value the template sets that the
// instancetype sets too is refused at the template's field, and so is a
// preference requirement the instancetype or template does not meet. An
// object that cannot be read (not created yet, or inferred from a volume)
// is not checked here, as in KubeVirt: the VM controller reports it when
// the VM starts.
func WithInstancetypes(r client.Reader) ValidatorOption {
	return func(v *Validator) { v.instancetypes = r }
}

// sizingOptions are the virt/spec options of the instancetype and
// preference vm is sized by, as far as they can be read now: for a VM that
// has started, the copies its status names (instancetypes.Specs), so that
// editing an instancetype does not make its running fleet's VMs refused.
func (v *Validator) sizingOptions(ctx context.Context, vm *virtv1.VirtualMachine) []spec.Option {
	if v.instancetypes == nil {
		return nil
	}
	// One that cannot be read yet (not created, or inferred from a volume)
	// is not checked: the VM controller reports it when the VM starts.
	it, pref, _ := instancetypes.Specs(ctx, v.instancetypes, vm)
	var out []spec.Option
	if it != nil {
		out = append(out, spec.WithInstancetype(it))
	}
	if pref != nil {
		out = append(out, spec.WithPreference(pref))
	}
	return out
}
