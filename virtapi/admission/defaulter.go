package admission

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/virtkit/virtkit/virt/instancetypes"
	"github.com/virtkit/virtkit/virt/spec"
)

// Defaulter is the mutating webhook: it applies spec.DefaultVM or
// spec.DefaultVMI and answers with the JSON patch. Given the reader of
// WithInstancetypes (Handlers passes it), it first resolves a VM's
// inferFromVolume matchers from its volume's claim
// (instancetypes.Infer), as KubeVirt's VM admission does.
type Defaulter struct {
	decoder       admission.Decoder
	opts          SpecOptions
	instancetypes client.Reader
	// suffix ends the generated target names of clones.
	suffix func() string
}

var _ admission.Handler = (*Defaulter)(nil)

// NewDefaulter returns the mutating webhook; opts are passed to virt/spec.
func NewDefaulter(scheme *runtime.Scheme, opts ...spec.Option) *Defaulter {
	return NewDefaulterFrom(scheme, Static(opts...))
}

// NewDefaulterFrom returns the mutating webhook with the spec options of
// each request's moment.
func NewDefaulterFrom(scheme *runtime.Scheme, opts SpecOptions) *Defaulter {
	return &Defaulter{decoder: admission.NewDecoder(scheme), opts: opts, suffix: randomSuffix}
}

// Handle defaults the object in req.
func (d *Defaulter) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Kind.Kind == "VirtualMachineClone" {
		return d.defaultClone(req)
	}
	opts, err := d.opts(ctx)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("the cluster's settings: %w", err))
	}
	var obj runtime.Object
	switch req.Kind.Kind {
	case "VirtualMachine":
		vm := &virtv1.VirtualMachine{}
		if err := d.decoder.Decode(req, vm); err != nil {
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("decode VirtualMachine %s/%s: %w", req.Namespace, req.Name, err))
		}
		if d.instancetypes != nil {
			if err := instancetypes.Infer(ctx, d.instancetypes, vm); err != nil {
				return admission.Errored(http.StatusBadRequest, fmt.Errorf("VirtualMachine %s/%s: %w", req.Namespace, req.Name, err))
			}
		}
		spec.DefaultVM(vm, opts...)
		obj = vm
	case "VirtualMachineInstance":
		vmi := &virtv1.VirtualMachineInstance{}
		if err := d.decoder.Decode(req, vmi); err != nil {
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("decode VirtualMachineInstance %s/%s: %w", req.Namespace, req.Name, err))
		}
		if req.Operation == "UPDATE" {
			// A running VMI's spec is not re-defaulted: what the handler
			// runs is what was admitted at creation.
			return admission.Allowed("")
		}
		spec.DefaultVMI(vmi, opts...)
		// Born with the VMI controller's finalizer: it costs that controller
		// a write per VMI otherwise.
		if !slices.Contains(vmi.Finalizers, virtv1.VirtualMachineInstanceFinalizer) {
			vmi.Finalizers = append(vmi.Finalizers, virtv1.VirtualMachineInstanceFinalizer)
		}
		obj = vmi
	default:
		return admission.Allowed("not a kind this webhook defaults")
	}
	return patchResponse(req, obj)
}

// patchResponse admits req with the JSON patch that turns its object into
// obj.
func patchResponse(req admission.Request, obj runtime.Object) admission.Response {
	mutated, err := json.Marshal(obj)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, mutated)
}
