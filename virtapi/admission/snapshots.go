package admission

import (
	"context"
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	virtv1 "kubevirt.io/api/core/v1"
	vmsnapshotv1 "kubevirt.io/api/snapshot/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/virtkit/virtkit/virt/storage/snapshot"
)

// WithSnapshots makes the webhook check VM restores against the cluster
// through r: the snapshot they name exists, and their target VM is not
// running. Without it only their fields are checked.
func WithSnapshots(r client.Reader) ValidatorOption { return func(v *Validator) { v.snapshots = r } }

// specFixed admits an update that leaves the spec as it was: the stored
// object is decoded into old, whose spec specOf returns.
func (v *Validator) specFixed(req admission.Request, gk schema.GroupKind, name string, spec any, old runtime.Object, specOf func(runtime.Object) any) admission.Response {
	if err := v.decoder.DecodeRaw(req.OldObject, old); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if !equality.Semantic.DeepEqual(specOf(old), spec) {
		return Verdict(gk, name, field.ErrorList{field.Forbidden(field.NewPath("spec"), "spec is immutable after creation")})
	}
	return admission.Allowed("")
}

// validateVMSource checks a snapshot's source or a restore's target: a
// VirtualMachine of kubevirt.io, by name.
func validateVMSource(ref corev1.TypedLocalObjectReference, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case ref.APIGroup == nil:
		errs = append(errs, field.Required(path.Child("apiGroup"), "missing apiGroup"))
	case *ref.APIGroup != virtv1.GroupVersion.Group:
		errs = append(errs, field.NotSupported(path.Child("apiGroup"), *ref.APIGroup, []string{virtv1.GroupVersion.Group}))
	}
	if ref.Kind != "VirtualMachine" {
		errs = append(errs, field.NotSupported(path.Child("kind"), ref.Kind, []string{"VirtualMachine"}))
	}
	if ref.Name == "" {
		errs = append(errs, field.Required(path.Child("name"), "the VirtualMachine's name is required"))
	}
	return errs
}

// validateSnapshot admits a VirtualMachineSnapshot: its source a VM, its
// spec fixed once made.
func (v *Validator) validateSnapshot(req admission.Request) admission.Response {
	s := &vmsnapshotv1.VirtualMachineSnapshot{}
	if err := v.decoder.Decode(req, s); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decode VirtualMachineSnapshot %s/%s: %w", req.Namespace, req.Name, err))
	}
	gk := vmsnapshotv1.SchemeGroupVersion.WithKind("VirtualMachineSnapshot").GroupKind()
	if req.Operation == "UPDATE" {
		return v.specFixed(req, gk, s.Name, s.Spec, &vmsnapshotv1.VirtualMachineSnapshot{}, func(o runtime.Object) any { return o.(*vmsnapshotv1.VirtualMachineSnapshot).Spec })
	}
	errs := validateVMSource(s.Spec.Source, field.NewPath("spec", "source"))
	if d := s.Spec.FailureDeadline; d != nil && d.Duration < 0 {
		errs = append(errs, field.Invalid(field.NewPath("spec", "failureDeadline"), d.Duration.String(), "cannot be negative"))
	}
	if p := s.Spec.DeletionPolicy; p != nil && *p != vmsnapshotv1.VirtualMachineSnapshotContentDelete && *p != vmsnapshotv1.VirtualMachineSnapshotContentRetain {
		errs = append(errs, field.NotSupported(field.NewPath("spec", "deletionPolicy"), *p,
			[]string{string(vmsnapshotv1.VirtualMachineSnapshotContentDelete), string(vmsnapshotv1.VirtualMachineSnapshotContentRetain)}))
	}
	return Verdict(gk, s.Name, errs)
}

// validateRestore admits a VirtualMachineRestore: its target a VM that is
// not running (unless its targetReadinessPolicy says to stop or wait for
// it), the snapshot it names there, its patches JSON patches of the spec
// (for a new VM), its volume restore policy one virtkit has, its spec
// fixed once made.
func (v *Validator) validateRestore(ctx context.Context, req admission.Request) admission.Response {
	r := &vmsnapshotv1.VirtualMachineRestore{}
	if err := v.decoder.Decode(req, r); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decode VirtualMachineRestore %s/%s: %w", req.Namespace, req.Name, err))
	}
	gk := vmsnapshotv1.SchemeGroupVersion.WithKind("VirtualMachineRestore").GroupKind()
	if req.Operation == "UPDATE" {
		return v.specFixed(req, gk, r.Name, r.Spec, &vmsnapshotv1.VirtualMachineRestore{}, func(o runtime.Object) any { return o.(*vmsnapshotv1.VirtualMachineRestore).Spec })
	}
	spec := field.NewPath("spec")
	errs := validateVMSource(r.Spec.Target, spec.Child("target"))
	if r.Spec.VirtualMachineSnapshotName == "" {
		errs = append(errs, field.Required(spec.Child("virtualMachineSnapshotName"), "the snapshot to restore is required"))
	}
	errs = append(errs, snapshot.ValidatePatches(r.Spec.Patches, spec.Child("patches"))...)
	switch p := ptr.Deref(r.Spec.VolumeRestorePolicy, vmsnapshotv1.VolumeRestorePolicyRandomizeNames); p {
	case vmsnapshotv1.VolumeRestorePolicyRandomizeNames, vmsnapshotv1.VolumeRestorePolicyPrefixTargetName, vmsnapshotv1.VolumeRestorePolicyInPlace:
	default:
		errs = append(errs, field.NotSupported(spec.Child("volumeRestorePolicy"), p,
			[]string{string(vmsnapshotv1.VolumeRestorePolicyRandomizeNames), string(vmsnapshotv1.VolumeRestorePolicyPrefixTargetName),
				string(vmsnapshotv1.VolumeRestorePolicyInPlace)}))
	}
	for i, o := range r.Spec.VolumeRestoreOverrides {
		if o.VolumeName == "" {
			errs = append(errs, field.Required(spec.Child("volumeRestoreOverrides").Index(i).Child("volumeName"), "must provide a volume name"))
		}
	}
	if len(errs) == 0 && v.snapshots != nil {
		more, err := v.restoreAgainstCluster(ctx, r)
		if err != nil {
			return admission.Errored(http.StatusInternalServerError, err)
		}
		errs = append(errs, more...)
	}
	return Verdict(gk, r.Name, errs)
}

// restoreAgainstCluster checks what a restore names: its snapshot exists,
// and its target VM, if it exists, does not run (unless told to stop or
// wait for it) nor is being restored by another.
func (v *Validator) restoreAgainstCluster(ctx context.Context, r *vmsnapshotv1.VirtualMachineRestore) (field.ErrorList, error) {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	s := &vmsnapshotv1.VirtualMachineSnapshot{}
	if err := v.snapshots.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: r.Spec.VirtualMachineSnapshotName}, s); apierrors.IsNotFound(err) {
		errs = append(errs, field.NotFound(spec.Child("virtualMachineSnapshotName"), r.Spec.VirtualMachineSnapshotName))
	} else if err != nil {
		return nil, err
	}
	key := client.ObjectKey{Namespace: r.Namespace, Name: r.Spec.Target.Name}
	vm := &virtv1.VirtualMachine{}
	if err := v.snapshots.Get(ctx, key, vm); apierrors.IsNotFound(err) {
		return errs, nil // a new VM
	} else if err != nil {
		return nil, err
	}
	if p := vm.Status.RestoreInProgress; p != nil {
		errs = append(errs, field.Invalid(spec.Child("target"), r.Spec.Target.Name, fmt.Sprintf("VirtualMachineRestore %q in progress", *p)))
	}
	switch ptr.Deref(r.Spec.TargetReadinessPolicy, "") {
	case vmsnapshotv1.VirtualMachineRestoreStopTarget, vmsnapshotv1.VirtualMachineRestoreWaitEventually, vmsnapshotv1.VirtualMachineRestoreWaitGracePeriodAndFail:
		return errs, nil
	}
	vmi := &virtv1.VirtualMachineInstance{}
	if err := v.snapshots.Get(ctx, key, vmi); err == nil && !vmi.IsFinal() {
		errs = append(errs, field.Invalid(spec.Child("target"), r.Spec.Target.Name,
			fmt.Sprintf("VirtualMachine %q is running (phase %s): stop it first, or set targetReadinessPolicy: StopTarget", vm.Name, vmi.Status.Phase)))
	} else if err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	return errs, nil
}
