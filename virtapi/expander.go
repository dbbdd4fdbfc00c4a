package virtapi

import (
	"context"
	"fmt"

	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/virt/instancetypes"
	"github.com/virtkit/virtkit/virt/spec"
	"github.com/virtkit/virtkit/virtapi/admission"
	"github.com/virtkit/virtkit/virtapi/subresources"
)

// expander is the subresources.Expander of a cluster: it reads the
// instancetype and preference a VM is sized by through r (a started VM's
// stored copies, instancetypes.Specs) and writes them into its template
// with spec.ExpandVM under the cluster's settings of the moment.
type expander struct {
	r    client.Reader
	opts admission.SpecOptions
}

var _ subresources.Expander = expander{}

func (e expander) Expand(ctx context.Context, vm *virtv1.VirtualMachine) (*virtv1.VirtualMachine, error) {
	it, pref, err := instancetypes.Specs(ctx, e.r, vm)
	if err != nil {
		return nil, err
	}
	opts, err := e.opts(ctx)
	if err != nil {
		return nil, fmt.Errorf("the cluster's settings: %w", err)
	}
	out, errs := spec.ExpandVM(vm, it, pref, opts...)
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return out, nil
}
