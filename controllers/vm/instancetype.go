package vm

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"
	instancetypev1beta1 "kubevirt.io/api/instancetype/v1beta1"

	"github.com/virtkit/virtkit/virt/instancetypes"
	"github.com/virtkit/virtkit/virt/spec"
)

// sized is what a VM's instancetype and preference say, as its VMIs are
// built from them: the specs kept in the VM's ControllerRevisions. Either
// may be nil.
type sized struct {
	instancetype *instancetypev1beta1.VirtualMachineInstancetypeSpec
	preference   *instancetypev1beta1.VirtualMachinePreferenceSpec
}

// sizing resolves vm's instancetype and preference as KubeVirt's VM
// controller does. The first time (or after the matcher names another
// object) it reads the object, keeps a copy in a ControllerRevision the VM
// owns and records it in vm.Status.InstancetypeRef / PreferenceRef
// (controllerRevisionRef); after that the revision is read, so that an edit
// of the instancetype does not change the VM. A matcher's revisionName
// names the revision to use. The caller writes vm's status.
func (r *Reconciler) sizing(ctx context.Context, vm *virtv1.VirtualMachine) (sized, *SyncError) {
	var out sized
	if m := vm.Spec.Instancetype; m != nil {
		rev, err := r.revision(ctx, vm, m.Name, m.Kind, m.RevisionName, m.InferFromVolume, &vm.Status.InstancetypeRef, "spec.instancetype",
			func(ctx context.Context) (*appsv1.ControllerRevision, error) { return r.instancetypeRevision(ctx, vm) })
		if err == nil {
			out.instancetype, err = spec.InstancetypeFromRevision(rev)
		}
		if err != nil {
			return sized{}, r.sizingFailed(vm, err)
		}
	}
	if m := vm.Spec.Preference; m != nil {
		rev, err := r.revision(ctx, vm, m.Name, m.Kind, m.RevisionName, m.InferFromVolume, &vm.Status.PreferenceRef, "spec.preference",
			func(ctx context.Context) (*appsv1.ControllerRevision, error) { return r.preferenceRevision(ctx, vm) })
		if err == nil {
			out.preference, err = spec.PreferenceFromRevision(rev)
		}
		if err != nil {
			return sized{}, r.sizingFailed(vm, err)
		}
	}
	return out, nil
}

// sizingFailed reports err as KubeVirt reports a VMI it could not create.
// It is retried: the instancetype may be created later.
func (r *Reconciler) sizingFailed(vm *virtv1.VirtualMachine, err error) *SyncError {
	r.recorder.Eventf(vm, k8sv1.EventTypeWarning, ReasonFailedCreate, "Error creating virtual machine instance: %v", err)
	return &SyncError{Reason: ReasonFailedCreate, Err: err}
}

// revision returns the ControllerRevision a matcher (name, kind,
// revisionName, inferFromVolume; at field) resolves to, given the VM's
// status reference ref: the one ref names while it records the same name
// and kind, else the one revisionName names, else a new one (store), which
// ref then records.
func (r *Reconciler) revision(ctx context.Context, vm *virtv1.VirtualMachine, name, kind, revisionName, infer string,
	ref **virtv1.InstancetypeStatusRef, field string, store func(context.Context) (*appsv1.ControllerRevision, error)) (*appsv1.ControllerRevision, error) {
	if name == "" {
		if infer != "" {
			return nil, fmt.Errorf("VirtualMachine %s/%s: %s.inferFromVolume %q: virt-api's admission resolves it into a name, "+
				"and this VM did not pass through it; name the object instead", vm.Namespace, vm.Name, field, infer)
		}
		return nil, fmt.Errorf("VirtualMachine %s/%s: %s.name: Required value", vm.Namespace, vm.Name, field)
	}
	cur := *ref
	if cur != nil && (cur.Name != name || cur.Kind != kind) {
		cur = nil // the matcher names another object now
	}
	want := ""
	switch {
	case revisionName != "":
		want = revisionName
	case cur != nil && cur.ControllerRevisionRef != nil:
		want = cur.ControllerRevisionRef.Name
	}
	var rev *appsv1.ControllerRevision
	if want != "" {
		rev = &appsv1.ControllerRevision{}
		if err := r.reader.Get(ctx, types.NamespacedName{Namespace: vm.Namespace, Name: want}, rev); err != nil {
			return nil, fmt.Errorf("VirtualMachine %s/%s: %s: ControllerRevision %q: %w", vm.Namespace, vm.Name, field, want, err)
		}
	} else {
		var err error
		if rev, err = store(ctx); err != nil {
			return nil, fmt.Errorf("VirtualMachine %s/%s: %s: %w", vm.Namespace, vm.Name, field, err)
		}
	}
	*ref = &virtv1.InstancetypeStatusRef{Name: name, Kind: kind, ControllerRevisionRef: &virtv1.ControllerRevisionRef{Name: rev.Name}}
	return rev, nil
}

// instancetypeRevision reads the instancetype vm names and keeps it in a
// new ControllerRevision.
func (r *Reconciler) instancetypeRevision(ctx context.Context, vm *virtv1.VirtualMachine) (*appsv1.ControllerRevision, error) {
	it, cit, err := instancetypes.Instancetype(ctx, r.reader, vm)
	if err != nil {
		return nil, err
	}
	rev, err := spec.NewInstancetypeRevision(vm, it, cit)
	if err != nil {
		return nil, err
	}
	return r.storeRevision(ctx, rev)
}

// preferenceRevision is instancetypeRevision for the VM's preference.
func (r *Reconciler) preferenceRevision(ctx context.Context, vm *virtv1.VirtualMachine) (*appsv1.ControllerRevision, error) {
	p, cp, err := instancetypes.Preference(ctx, r.reader, vm)
	if err != nil {
		return nil, err
	}
	rev, err := spec.NewPreferenceRevision(vm, p, cp)
	if err != nil {
		return nil, err
	}
	return r.storeRevision(ctx, rev)
}

// storeRevision creates rev, or takes the revision of its name that exists
// when it keeps the same object (a reconcile whose status write was lost).
func (r *Reconciler) storeRevision(ctx context.Context, rev *appsv1.ControllerRevision) (*appsv1.ControllerRevision, error) {
	err := r.client.Create(ctx, rev)
	if !apierrors.IsAlreadyExists(err) {
		return rev, err
	}
	have := &appsv1.ControllerRevision{}
	if err := r.reader.Get(ctx, types.NamespacedName{Namespace: rev.Namespace, Name: rev.Name}, have); err != nil {
		return nil, err
	}
	if !equality.Semantic.DeepEqual(have.OwnerReferences, rev.OwnerReferences) || !sameData(have, rev) {
		return nil, fmt.Errorf("ControllerRevision %s/%s exists and keeps something else", rev.Namespace, rev.Name)
	}
	return have, nil
}

// sameData reports whether two revisions keep the same spec.
func sameData(a, b *appsv1.ControllerRevision) bool {
	if ia, err := spec.InstancetypeFromRevision(a); err == nil {
		ib, err := spec.InstancetypeFromRevision(b)
		return err == nil && equality.Semantic.DeepEqual(ia, ib)
	}
	pa, err := spec.PreferenceFromRevision(a)
	if err != nil {
		return false
	}
	pb, err := spec.PreferenceFromRevision(b)
	return err == nil && equality.Semantic.DeepEqual(pa, pb)
}
