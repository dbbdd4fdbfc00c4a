package instancetypes

import (
	"context"
	"fmt"

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
