package vm

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/virt/spec"
)

// ErrNotOwned is the cause of a FailedCreate when a VMI of the VM's name
// exists but is not controlled by the VM.
var ErrNotOwned = errors.New("a VirtualMachineInstance of this name exists and is not controlled by the VirtualMachine")

// createVMI creates the VMI vm's template produces and returns it.
func (r *Reconciler) createVMI(ctx context.Context, vm *virtv1.VirtualMachine) (*virtv1.VirtualMachineInstance, *SyncError) {
	// The cache may not show a VMI this controller just created: a read
	// here is cheaper than a create the apiserver refuses.
	live := &virtv1.VirtualMachineInstance{}
	err := r.reader.Get(ctx, client.ObjectKeyFromObject(vm), live)
	switch {
	case err == nil && controlledBy(live, vm.UID):
		if live.DeletionTimestamp == nil && r.deleted.Stale(client.ObjectKeyFromObject(vm), string(live.UID)) {
			return deletedView(live, r.clock.Now()), nil
		}
		return live, nil
	case err == nil:
		err = fmt.Errorf("VirtualMachineInstance %s/%s: %w", vm.Namespace, vm.Name, ErrNotOwned)
		r.recorder.Eventf(vm, k8sv1.EventTypeWarning, ReasonFailedCreate, "Error creating virtual machine instance: %v", err)
		return nil, &SyncError{Reason: ReasonFailedCreate, Err: err}
	case !apierrors.IsNotFound(err):
		return nil, &SyncError{Reason: ReasonFailedCreate, Err: fmt.Errorf("getting VirtualMachineInstance %s/%s: %w", vm.Namespace, vm.Name, err)}
	}
	opts, err := r.specOptions(ctx)
	if err != nil {
		return nil, &SyncError{Reason: ReasonFailedCreate, Err: fmt.Errorf("VirtualMachine %s/%s: the cluster's settings: %w", vm.Namespace, vm.Name, err)}
	}
	size, serr := r.sizing(ctx, vm)
	if serr != nil {
		return nil, serr
	}
	vmi, errs := r.vmiFor(vm, size, opts)
	if len(errs) == 0 {
		errs = spec.ValidateVMI(vmi, opts...)
	}
	if len(errs) > 0 {
		err := fmt.Errorf("VirtualMachine %s/%s: spec.template: %w", vm.Namespace, vm.Name, errs.ToAggregate())
		r.recorder.Eventf(vm, k8sv1.EventTypeWarning, ReasonFailedCreate, "Error creating virtual machine instance: %v", err)
		// The spec must change first: retrying cannot help.
		return nil, &SyncError{Reason: ReasonFailedCreate, Err: err, Terminal: true}
	}
	if err := r.client.Create(ctx, vmi); err != nil {
		r.recorder.Eventf(vm, k8sv1.EventTypeWarning, ReasonFailedCreate, "Error creating virtual machine instance: %v", err)
		return nil, &SyncError{Reason: ReasonFailedCreate, Err: fmt.Errorf("creating VirtualMachineInstance %s/%s: %w", vmi.Namespace, vmi.Name, err)}
	}
	r.recorder.Eventf(vm, k8sv1.EventTypeNormal, ReasonSuccessfulCreate,
		"Started the virtual machine by creating the new virtual machine instance %v", vmi.Name)
	return vmi, nil
}

// vmiFor builds and defaults the VMI for vm, as KubeVirt's startVMI does:
// its template, with the instancetype and preference (size) expanded into
// it and named in its annotations. Conflicts between the template and the
// instancetype are returned at the VM's fields.
func (r *Reconciler) vmiFor(vm *virtv1.VirtualMachine, size sized, opts []spec.Option) (*virtv1.VirtualMachineInstance, field.ErrorList) {
	vmi := spec.NewVMIFromVM(vm)
	tp := field.NewPath("spec", "template")
	if errs := spec.ApplyInstancetype(&vmi.Spec, tp.Child("spec"), size.instancetype, size.preference); len(errs) > 0 {
		return nil, errs
	}
	if errs := spec.ApplyAnnotations(&vmi.ObjectMeta, size.instancetype, size.preference); len(errs) > 0 {
		return nil, errs
	}
	nameSizing(vm, vmi)
	if hasStartPausedRequest(vm) {
		paused := virtv1.StartStrategyPaused
		vmi.Spec.StartStrategy = &paused
	}
	if vmi.Annotations == nil {
		vmi.Annotations = map[string]string{}
	}
	vmi.Annotations[virtv1.VirtualMachineGenerationAnnotation] = strconv.FormatInt(vm.Generation, 10)
	vmi.Annotations[AnnTemplateHash] = TemplateHash(vm)
	vmi.Annotations[AnnNetworkHash] = NetworkHash(vm)
	// The VMI is born with the VMI controller's finalizer, which that
	// controller would otherwise add with a write of its own.
	vmi.Finalizers = append(vmi.Finalizers, virtv1.VirtualMachineInstanceFinalizer)
	spec.DefaultVMI(vmi, opts...)
	return vmi, nil
}

// nameSizing records on vmi the instancetype and preference vm names, in
// KubeVirt's annotations (kubevirt.io/instancetype-name or
// kubevirt.io/cluster-instancetype-name, and the preference's).
func nameSizing(vm *virtv1.VirtualMachine, vmi *virtv1.VirtualMachineInstance) {
	set := func(k, v string) {
		if vmi.Annotations == nil {
			vmi.Annotations = map[string]string{}
		}
		vmi.Annotations[k] = v
	}
	if m := vm.Spec.Instancetype; m != nil && m.Name != "" {
		if kind, _ := spec.InstancetypeKind(m); kind == spec.KindInstancetype {
			set(virtv1.InstancetypeAnnotation, m.Name)
		} else {
			set(virtv1.ClusterInstancetypeAnnotation, m.Name)
		}
	}
	if m := vm.Spec.Preference; m != nil && m.Name != "" {
		if kind, _ := spec.PreferenceKind(m); kind == spec.KindPreference {
			set(virtv1.PreferenceAnnotation, m.Name)
		} else {
			set(virtv1.ClusterPreferenceAnnotation, m.Name)
		}
	}
}

// specOptions are the spec options of a VMI created now.
func (r *Reconciler) specOptions(ctx context.Context) ([]spec.Option, error) {
	if r.specSource == nil {
		return r.specOpts, nil
	}
	return r.specSource(ctx)
}

// deleteVMI deletes vmi gracefully, only if it is still the same object. It
// returns the VMI as it now is: nil when it is gone, else marked for deletion
// (the VMI controller's finalizer keeps it until the guest is down).
func (r *Reconciler) deleteVMI(ctx context.Context, vm *virtv1.VirtualMachine, vmi *virtv1.VirtualMachineInstance) (*virtv1.VirtualMachineInstance, *SyncError) {
	err := r.client.Delete(ctx, vmi, client.Preconditions{UID: &vmi.UID})
	switch {
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		return nil, nil // gone, or replaced by a VMI this reconcile did not see
	case err != nil:
		r.recorder.Eventf(vm, k8sv1.EventTypeWarning, ReasonFailedDelete, "Error deleting virtual machine instance %s: %v", vmi.Name, err)
		return vmi, &SyncError{Reason: ReasonFailedDelete, Err: fmt.Errorf("deleting VirtualMachineInstance %s/%s: %w", vmi.Namespace, vmi.Name, err)}
	}
	// The delete replaced the VMI itself: the cache may show it still.
	r.deleted.Replaced(client.ObjectKeyFromObject(vm), string(vmi.UID), "")
	r.recorder.Eventf(vm, k8sv1.EventTypeNormal, ReasonSuccessfulDelete,
		"Stopped the virtual machine by deleting the virtual machine instance %v", vmi.UID)
	return deletedView(vmi, r.clock.Now()), nil
}

// deletedView is vmi as it is once deleted: gone when no finalizer holds it,
// else marked for deletion until the VMI controller lets it go.
func deletedView(vmi *virtv1.VirtualMachineInstance, now time.Time) *virtv1.VirtualMachineInstance {
	if len(vmi.Finalizers) == 0 {
		return nil
	}
	view := vmi.DeepCopy()
	ts := metav1.NewTime(now)
	view.DeletionTimestamp = &ts
	return view
}
