package admission

import (
	"context"
	"fmt"
	"net/http"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	virtv1 "kubevirt.io/api/core/v1"
	poolv1 "kubevirt.io/api/pool/v1beta1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/virtkit/virtkit/virt/spec"
	"github.com/virtkit/virtkit/virt/storage/dvspec"
)

// Validator is the validating webhook: it applies spec.ValidateVM,
// spec.ValidateVMI, spec.ValidateReplicaSet or spec.ValidatePool, and keeps
// a VMI's spec fixed after creation.
type Validator struct {
	decoder    admission.Decoder
	opts       []SpecOptions
	privileged map[string]bool
	// instancetypes reads the instancetypes and preferences VMs name
	// (WithInstancetypes); nil: not checked.
	instancetypes client.Reader
	// clones authorizes clones from other namespaces
	// (WithCloneAuthorization); nil: not checked.
	clones client.Client
	// snapshots reads what VM restores name (WithSnapshots); nil: not
	// checked.
	snapshots client.Reader
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
	own := v.privileged[req.UserInfo.Username]
	switch req.Kind.Kind {
	case "VirtualMachine":
		vm := &virtv1.VirtualMachine{}
		if err := v.decoder.Decode(req, vm); err != nil {
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("decode VirtualMachine %s/%s: %w", req.Namespace, req.Name, err))
		}
		gk := virtv1.VirtualMachineGroupVersionKind.GroupKind()
		var oldLabels map[string]string
		if req.Operation == "UPDATE" {
			if vm.DeletionTimestamp != nil {
				// Being deleted: whatever its spec, its finalizers must be
				// removable (as KubeVirt, which admits such updates at once).
				return admission.Allowed("the VirtualMachine is being deleted")
			}
			old := &virtv1.VirtualMachine{}
			if err := v.decoder.DecodeRaw(req.OldObject, old); err != nil {
				return admission.Errored(http.StatusBadRequest, fmt.Errorf("decode the stored VirtualMachine %s/%s: %w", req.Namespace, req.Name, err))
			}
			if old.Spec.Template != nil {
				oldLabels = old.Spec.Template.ObjectMeta.Labels
			}
		}
		opts, err := v.specOptions(ctx)
		if err != nil {
			return admission.Errored(http.StatusInternalServerError, err)
		}
		errs := spec.ValidateVM(vm, append(opts, v.sizingOptions(ctx, vm)...)...)
		for i := range vm.Spec.DataVolumeTemplates {
			t := &vm.Spec.DataVolumeTemplates[i]
			path := field.NewPath("spec", "dataVolumeTemplates").Index(i).Child("spec")
			errs = append(errs, dvspec.ValidateSpec(vm.Namespace, t.Name, &t.Spec, path)...)
			if own {
				continue
			}
			// The VM controller makes these DataVolumes: the user's right
			// to clone is checked here, as KubeVirt's webhook does.
			denied, err := v.authorizeClone(ctx, req.UserInfo, vm.Namespace, t.Name, &t.Spec, path)
			if err != nil {
				return admission.Errored(http.StatusInternalServerError, err)
			}
			errs = append(errs, denied...)
		}
		if t := vm.Spec.Template; t != nil && !own {
			errs = append(errs, spec.ValidateReservedLabels(field.NewPath("spec", "template", "metadata", "labels"), t.ObjectMeta.Labels, oldLabels)...)
		}
		return Verdict(gk, vm.Name, errs)
	case "VirtualMachineInstance":
		vmi := &virtv1.VirtualMachineInstance{}
		if err := v.decoder.Decode(req, vmi); err != nil {
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("decode VirtualMachineInstance %s/%s: %w", req.Namespace, req.Name, err))
		}
		gk := virtv1.VirtualMachineInstanceGroupVersionKind.GroupKind()
		labels := field.NewPath("metadata", "labels")
		if req.Operation == "UPDATE" {
			old := &virtv1.VirtualMachineInstance{}
			if err := v.decoder.DecodeRaw(req.OldObject, old); err != nil {
				return admission.Errored(http.StatusBadRequest, fmt.Errorf("decode the stored VirtualMachineInstance %s/%s: %w", req.Namespace, req.Name, err))
			}
			if !own {
				errs := spec.ValidateReservedLabels(labels, vmi.Labels, old.Labels)
				if !equality.Semantic.DeepEqual(old.Spec, vmi.Spec) {
					errs = append(errs, field.Forbidden(field.NewPath("spec"),
						"a VirtualMachineInstance's spec cannot change after creation; change its VirtualMachine and restart it"))
				}
				return Verdict(gk, vmi.Name, errs)
			}
			if equality.Semantic.DeepEqual(old.Spec, vmi.Spec) {
				return admission.Allowed("")
			}
			// virtkit's own components change a running VMI's spec only to
			// hotplug a volume or shorten its grace period, and what they
			// write is validated like a user's: virt-api's account must not
			// carry a request past the checks.
			if errs := liveChanges(&old.Spec, &vmi.Spec, old.Status.MigratedVolumes); len(errs) > 0 {
				return Verdict(gk, vmi.Name, errs)
			}
		}
		opts, err := v.specOptions(ctx)
		if err != nil {
			return admission.Errored(http.StatusInternalServerError, err)
		}
		errs := spec.ValidateVMI(vmi, opts...)
		if req.Operation != "UPDATE" && !own {
			errs = append(errs, spec.ValidateReservedLabels(labels, vmi.Labels, nil)...)
		}
		return Verdict(gk, vmi.Name, errs)
	case "VirtualMachineInstanceReplicaSet":
		rs := &virtv1.VirtualMachineInstanceReplicaSet{}
		if err := v.decoder.Decode(req, rs); err != nil {
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("decode VirtualMachineInstanceReplicaSet %s/%s: %w", req.Namespace, req.Name, err))
		}
		if rs.DeletionTimestamp != nil {
			return admission.Allowed("the VirtualMachineInstanceReplicaSet is being deleted")
		}
		var oldLabels map[string]string
		if req.Operation == "UPDATE" {
			old := &virtv1.VirtualMachineInstanceReplicaSet{}
			if err := v.decoder.DecodeRaw(req.OldObject, old); err != nil {
				return admission.Errored(http.StatusBadRequest, fmt.Errorf("decode the stored VirtualMachineInstanceReplicaSet %s/%s: %w", req.Namespace, req.Name, err))
			}
			if old.Spec.Template != nil {
				oldLabels = old.Spec.Template.ObjectMeta.Labels
			}
		}
		opts, err := v.specOptions(ctx)
		if err != nil {
			return admission.Errored(http.StatusInternalServerError, err)
		}
		errs := spec.ValidateReplicaSet(rs, opts...)
		if t := rs.Spec.Template; t != nil && !own {
			// The VMIs it makes carry these labels: the same reserved keys
			// apply as to a VMI's own.
			errs = append(errs, spec.ValidateReservedLabels(field.NewPath("spec", "template", "metadata", "labels"), t.ObjectMeta.Labels, oldLabels)...)
		}
		return Verdict(virtv1.VirtualMachineInstanceReplicaSetGroupVersionKind.GroupKind(), rs.Name, errs)
	case poolv1.VirtualMachinePoolKind:
		pool := &poolv1.VirtualMachinePool{}
		if err := v.decoder.Decode(req, pool); err != nil {
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("decode VirtualMachinePool %s/%s: %w", req.Namespace, req.Name, err))
		}
		if pool.DeletionTimestamp != nil {
			return admission.Allowed("the VirtualMachinePool is being deleted")
		}
		var oldLabels map[string]string
		if req.Operation == "UPDATE" {
			old := &poolv1.VirtualMachinePool{}
			if err := v.decoder.DecodeRaw(req.OldObject, old); err != nil {
				return admission.Errored(http.StatusBadRequest, fmt.Errorf("decode the stored VirtualMachinePool %s/%s: %w", req.Namespace, req.Name, err))
			}
			if t := old.Spec.VirtualMachineTemplate; t != nil && t.Spec.Template != nil {
				oldLabels = t.Spec.Template.ObjectMeta.Labels
			}
		}
		opts, err := v.specOptions(ctx)
		if err != nil {
			return admission.Errored(http.StatusInternalServerError, err)
		}
		errs := spec.ValidatePool(pool, opts...)
		if t := pool.Spec.VirtualMachineTemplate; t != nil && t.Spec.Template != nil && !own {
			// Its VMs' VMIs carry these labels.
			errs = append(errs, spec.ValidateReservedLabels(field.NewPath("spec", "virtualMachineTemplate", "spec", "template", "metadata", "labels"),
				t.Spec.Template.ObjectMeta.Labels, oldLabels)...)
		}
		return Verdict(poolv1.SchemeGroupVersion.WithKind(poolv1.VirtualMachinePoolKind).GroupKind(), pool.Name, errs)
	case "DataVolume":
		dv := &cdiv1.DataVolume{}
		if err := v.decoder.Decode(req, dv); err != nil {
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("decode DataVolume %s/%s: %w", req.Namespace, req.Name, err))
		}
		if dv.DeletionTimestamp != nil {
			return admission.Allowed("the DataVolume is being deleted")
		}
		var old *cdiv1.DataVolume
		if req.Operation == "UPDATE" {
			old = &cdiv1.DataVolume{}
			if err := v.decoder.DecodeRaw(req.OldObject, old); err != nil {
				return admission.Errored(http.StatusBadRequest, fmt.Errorf("decode the stored DataVolume %s/%s: %w", req.Namespace, req.Name, err))
			}
		}
		errs := dvspec.Validate(dv, old)
		if old == nil && !own {
			// virtkit's own components make the DataVolumes of VMs'
			// templates, whose clones were authorized with the VM.
			denied, err := v.authorizeClone(ctx, req.UserInfo, dv.Namespace, dv.Name, &dv.Spec, field.NewPath("spec"))
			if err != nil {
				return admission.Errored(http.StatusInternalServerError, err)
			}
			errs = append(errs, denied...)
		}
		return Verdict(cdiv1.SchemeGroupVersion.WithKind("DataVolume").GroupKind(), dv.Name, errs)
	case "VirtualMachineSnapshot":
		return v.validateSnapshot(req)
	case "VirtualMachineRestore":
		return v.validateRestore(ctx, req)
	case "VirtualMachineClone":
		return v.validateClone(req)
	}
	return admission.Allowed("not a kind this webhook validates")
}
