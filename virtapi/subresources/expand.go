package subresources

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	virtv1 "kubevirt.io/api/core/v1"
)

// Expander writes the instancetype and preference a VM names into its
// template: what the expand-spec calls answer. virtapi wires the one that
// reads them from the cluster (virt/instancetypes) and expands with
// virt/spec.ExpandVM. An error the VM's fields cause (a conflict between
// the template and the instancetype) is a *field.Error aggregate.
type Expander interface {
	Expand(ctx context.Context, vm *virtv1.VirtualMachine) (*virtv1.VirtualMachine, error)
}

// WithExpander serves KubeVirt's expand calls: GET
// .../namespaces/NS/virtualmachines/NAME/expand-spec (a stored VM) and PUT
// .../namespaces/NS/expand-vm-spec (the VM in the body). Without one they
// are not served.
func WithExpander(e Expander) Option { return func(s *Server) { s.expander = e } }

// ExpandVMSpecResource is the namespaced resource PUT expands a VM of the
// body with: RBAC verb update on expand-vm-spec, as in KubeVirt.
const ExpandVMSpecResource = "expand-vm-spec"

// maxVMBody bounds the VM of an expand-vm-spec call: the apiserver stores
// no object larger.
const maxVMBody = 3 << 20

// expandSpec answers GET virtualmachines/NAME/expand-spec: the stored VM,
// expanded. As in KubeVirt, a VM that cannot be expanded (its instancetype
// is missing, or conflicts with its template) is a server error here: the
// stored object is what it is.
func (s *Server) expandSpec(ctx context.Context, req *request) error {
	vm, err := s.getVM(ctx, req)
	if err != nil {
		return err
	}
	out, err := s.expander.Expand(ctx, vm)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	writeJSON(req.w, out)
	return nil
}

// expandVMSpec answers PUT expand-vm-spec: the VM of the body, in the
// call's namespace, expanded; anything wrong with it is a 400.
func (s *Server) expandVMSpec(ctx context.Context, req *request) error {
	if req.r.Body == nil || req.r.Body == http.NoBody {
		return badRequest("empty request body: send the VirtualMachine to expand")
	}
	vm := &virtv1.VirtualMachine{}
	dec := json.NewDecoder(http.MaxBytesReader(req.w, req.r.Body, maxVMBody))
	if err := dec.Decode(vm); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.Is(err, io.EOF) {
			return badRequest("empty request body: send the VirtualMachine to expand")
		}
		if errors.As(err, &tooLarge) {
			return apierrors.NewRequestEntityTooLargeError("the VirtualMachine to expand is larger than 3 MiB")
		}
		return badRequest("Can not unmarshal Request body to struct, error: %v; send a JSON VirtualMachine", err)
	}
	if vm.Kind != "" && vm.Kind != "VirtualMachine" {
		return badRequest("kind %q: send a VirtualMachine", vm.Kind)
	}
	if vm.Namespace != "" && vm.Namespace != req.namespace {
		return badRequest("VM namespace must be empty or %s", req.namespace)
	}
	vm.Namespace = req.namespace
	out, err := s.expander.Expand(ctx, vm)
	if err != nil {
		return badRequest("%v", err)
	}
	writeJSON(req.w, out)
	return nil
}
