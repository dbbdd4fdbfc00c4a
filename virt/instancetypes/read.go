package instancetypes

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"
	instancetypev1beta1 "kubevirt.io/api/instancetype/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/virt/spec"
)

// Getter is what the readers need of a client: controller-runtime's
// client.Reader satisfies it (virt-api's direct client, or a manager's API
// reader for a read that must be current).
type Getter interface {
	Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error
}

// Instancetype reads the instancetype vm names through r: the namespaced
// one or the cluster-wide one, as the matcher's kind says; the other is
// nil. A VM without an instancetype matcher, or one inferred from a volume
// (no name), yields neither and no error.
func Instancetype(ctx context.Context, r Getter, vm *virtv1.VirtualMachine) (
	*instancetypev1beta1.VirtualMachineInstancetype, *instancetypev1beta1.VirtualMachineClusterInstancetype, error) {
	m := vm.Spec.Instancetype
	if m == nil || m.Name == "" {
		return nil, nil, nil
	}
	kind, err := spec.InstancetypeKind(m)
	if err != nil {
		return nil, nil, err
	}
	if kind == spec.KindInstancetype {
		it := &instancetypev1beta1.VirtualMachineInstancetype{}
		if err := r.Get(ctx, types.NamespacedName{Namespace: vm.Namespace, Name: m.Name}, it); err != nil {
			return nil, nil, fmt.Errorf("%s %s/%s: %w", kind, vm.Namespace, m.Name, err)
		}
		return it, nil, nil
	}
	cit := &instancetypev1beta1.VirtualMachineClusterInstancetype{}
	if err := r.Get(ctx, types.NamespacedName{Name: m.Name}, cit); err != nil {
		return nil, nil, fmt.Errorf("%s %s: %w", kind, m.Name, err)
	}
	return nil, cit, nil
}

// Preference is Instancetype for vm's preference.
func Preference(ctx context.Context, r Getter, vm *virtv1.VirtualMachine) (
	*instancetypev1beta1.VirtualMachinePreference, *instancetypev1beta1.VirtualMachineClusterPreference, error) {
	m := vm.Spec.Preference
	if m == nil || m.Name == "" {
		return nil, nil, nil
	}
	kind, err := spec.PreferenceKind(m)
	if err != nil {
		return nil, nil, err
	}
	if kind == spec.KindPreference {
		p := &instancetypev1beta1.VirtualMachinePreference{}
		if err := r.Get(ctx, types.NamespacedName{Namespace: vm.Namespace, Name: m.Name}, p); err != nil {
			return nil, nil, fmt.Errorf("%s %s/%s: %w", kind, vm.Namespace, m.Name, err)
		}
		return p, nil, nil
	}
	cp := &instancetypev1beta1.VirtualMachineClusterPreference{}
	if err := r.Get(ctx, types.NamespacedName{Name: m.Name}, cp); err != nil {
		return nil, nil, fmt.Errorf("%s %s: %w", kind, m.Name, err)
	}
	return nil, cp, nil
}

// Specs returns the instancetype and preference specs vm is sized by, as
// KubeVirt's finders read them: from the ControllerRevision the matcher's
// revisionName names, else the one the VM's status records for the same
// object (a VM that has started keeps the copy it started with), else the
// object itself. A matcher vm does not have yields nil. Each is read on
// its own: one that cannot be read is nil, and its error is returned with
// the other.
func Specs(ctx context.Context, r Getter, vm *virtv1.VirtualMachine) (
	*instancetypev1beta1.VirtualMachineInstancetypeSpec, *instancetypev1beta1.VirtualMachinePreferenceSpec, error) {
	var it *instancetypev1beta1.VirtualMachineInstancetypeSpec
	var pref *instancetypev1beta1.VirtualMachinePreferenceSpec
	var itErr, prefErr error
	if m := vm.Spec.Instancetype; m != nil {
		it, itErr = instancetypeSpec(ctx, r, vm, m)
	}
	if m := vm.Spec.Preference; m != nil {
		pref, prefErr = preferenceSpec(ctx, r, vm, m)
	}
	return it, pref, errors.Join(itErr, prefErr)
}

func instancetypeSpec(ctx context.Context, r Getter, vm *virtv1.VirtualMachine, m *virtv1.InstancetypeMatcher) (
	*instancetypev1beta1.VirtualMachineInstancetypeSpec, error) {
	rev, err := storedRevision(ctx, r, vm, m.Name, m.Kind, m.RevisionName, vm.Status.InstancetypeRef, "spec.instancetype")
	switch {
	case err != nil:
		return nil, err
	case rev != nil:
		return spec.InstancetypeFromRevision(rev)
	}
	ns, cl, err := Instancetype(ctx, r, vm)
	if err != nil {
		return nil, err
	}
	return spec.InstancetypeSpecFor(m, ns, cl)
}

func preferenceSpec(ctx context.Context, r Getter, vm *virtv1.VirtualMachine, m *virtv1.PreferenceMatcher) (
	*instancetypev1beta1.VirtualMachinePreferenceSpec, error) {
	rev, err := storedRevision(ctx, r, vm, m.Name, m.Kind, m.RevisionName, vm.Status.PreferenceRef, "spec.preference")
	switch {
	case err != nil:
		return nil, err
	case rev != nil:
		return spec.PreferenceFromRevision(rev)
	}
	ns, cl, err := Preference(ctx, r, vm)
	if err != nil {
		return nil, err
	}
	return spec.PreferenceSpecFor(m, ns, cl)
}

// storedRevision reads the revision a matcher (name, kind, revisionName, at
// field) resolves to given the VM's status reference ref; nil when none
// applies and the object itself is to be read.
func storedRevision(ctx context.Context, r Getter, vm *virtv1.VirtualMachine, name, kind, revisionName string,
	ref *virtv1.InstancetypeStatusRef, field string) (*appsv1.ControllerRevision, error) {
	want := revisionName
	if want == "" && ref != nil && ref.Name == name && ref.Kind == kind && ref.ControllerRevisionRef != nil {
		want = ref.ControllerRevisionRef.Name
	}
	if want == "" {
		return nil, nil
	}
	rev := &appsv1.ControllerRevision{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: vm.Namespace, Name: want}, rev); err != nil {
		return nil, fmt.Errorf("VirtualMachine %s/%s: %s: ControllerRevision %q: %w", vm.Namespace, vm.Name, field, want, err)
	}
	return rev, nil
}
