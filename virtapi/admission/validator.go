package admission

import (
	"context"
	"fmt"
	"net/http"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/virtkit/virtkit/virt/spec"
)

// Validator is the validating webhook: it applies spec.ValidateVM or
// spec.ValidateVMI, and keeps a VMI's spec fixed after creation.
type Validator struct {
	decoder    admission.Decoder
	opts       []SpecOptions
	privileged map[string]bool
}

var _ admission.Handler = (*Validator)(nil)

// ValidatorOption changes a Validator.
type ValidatorOption func(*Validator)

// WithSpecOptions passes options to virt/spec's validation.
func WithSpecOptions(opts ...spec.Option) ValidatorOption {
	return WithSpecOptionsFrom(Static(opts...))
}

// WithSpecOptionsFrom passes the options of each request's moment to
// virt/spec's validation.
func WithSpecOptionsFrom(opts SpecOptions) ValidatorOption {
	return func(v *Validator) { v.opts = append(v.opts, opts) }
}

// specOptions gathers the options in force now.
func (v *Validator) specOptions(ctx context.Context) ([]spec.Option, error) {
	var out []spec.Option
	for _, f := range v.opts {
		o, err := f(ctx)
		if err != nil {
			return nil, fmt.Errorf("the cluster's settings: %w", err)
		}
		out = append(out, o...)
	}
	return out, nil
}

// WithPrivilegedUsers names the users (virtkit's own service accounts, such
// as system:serviceaccount:kubevirt:kubevirt-handler) that may change a
// VMI's spec after creation, as hotplug and migration do. Nobody else may.
func WithPrivilegedUsers(users ...string) ValidatorOption {
	return func(v *Validator) {
		for _, u := range users {
			v.privileged[u] = true
		}
	}
}

// NewValidator returns the validating webhook.
func NewValidator(scheme *runtime.Scheme, opts ...ValidatorOption) *Validator {
	v := &Validator{decoder: admission.NewDecoder(scheme), privileged: map[string]bool{}}
	for _, o := range opts {
		o(v)
	}
	return v
}

// Handle validates the object in req.
func (v *Validator) Handle(ctx context.Context, req admission.Request) admission.Response {
	switch req.Kind.Kind {
	case "VirtualMachine":
		vm := &virtv1.VirtualMachine{}
		if err := v.decoder.Decode(req, vm); err != nil {
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("decode VirtualMachine %s/%s: %w", req.Namespace, req.Name, err))
		}
		opts, err := v.specOptions(ctx)
		if err != nil {
			return admission.Errored(http.StatusInternalServerError, err)
		}
		return verdict(virtv1.VirtualMachineGroupVersionKind.GroupKind(), vm.Name, spec.ValidateVM(vm, opts...))
	case "VirtualMachineInstance":
		vmi := &virtv1.VirtualMachineInstance{}
		if err := v.decoder.Decode(req, vmi); err != nil {
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("decode VirtualMachineInstance %s/%s: %w", req.Namespace, req.Name, err))
		}
		gk := virtv1.VirtualMachineInstanceGroupVersionKind.GroupKind()
		if req.Operation == "UPDATE" {
			old := &virtv1.VirtualMachineInstance{}
			if err := v.decoder.DecodeRaw(req.OldObject, old); err != nil {
				return admission.Errored(http.StatusBadRequest, fmt.Errorf("decode the stored VirtualMachineInstance %s/%s: %w", req.Namespace, req.Name, err))
			}
			if !equality.Semantic.DeepEqual(old.Spec, vmi.Spec) && !v.privileged[req.UserInfo.Username] {
				return verdict(gk, vmi.Name, field.ErrorList{field.Forbidden(field.NewPath("spec"),
					"a VirtualMachineInstance's spec cannot change after creation; change its VirtualMachine and restart it")})
			}
			return admission.Allowed("")
		}
		opts, err := v.specOptions(ctx)
		if err != nil {
			return admission.Errored(http.StatusInternalServerError, err)
		}
		return verdict(gk, vmi.Name, spec.ValidateVMI(vmi, opts...))
	}
	return admission.Allowed("not a kind this webhook validates")
}

// verdict allows an object without errors and otherwise denies it the way
// the apiserver's own validation does: 422 Invalid, one cause per field.
func verdict(gk schema.GroupKind, name string, errs field.ErrorList) admission.Response {
	if len(errs) == 0 {
		return admission.Allowed("")
	}
	resp := admission.Denied(errs.ToAggregate().Error())
	causes := make([]metav1.StatusCause, 0, len(errs))
	for _, e := range errs {
		causes = append(causes, metav1.StatusCause{Type: metav1.CauseType(e.Type), Message: e.ErrorBody(), Field: e.Field})
	}
	resp.Result.Code = http.StatusUnprocessableEntity
	resp.Result.Reason = metav1.StatusReasonInvalid
	resp.Result.Details = &metav1.StatusDetails{Group: gk.Group, Kind: gk.Kind, Name: name, Causes: causes}
	return resp
}
