package instancetypes_test

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	instancetypev1beta1 "kubevirt.io/api/instancetype/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/virtkit/virtkit/internal/scheme"
	"github.com/virtkit/virtkit/virt/instancetypes"
)

func TestReadByTheMatchersKind(t *testing.T) {
	s := scheme.New()
	r := fake.NewClientBuilder().WithScheme(s).WithObjects(
		&instancetypev1beta1.VirtualMachineInstancetype{ObjectMeta: metav1.ObjectMeta{Name: "small", Namespace: "ns"}},
		&instancetypev1beta1.VirtualMachineClusterInstancetype{ObjectMeta: metav1.ObjectMeta{Name: "small"}},
		&instancetypev1beta1.VirtualMachineClusterPreference{ObjectMeta: metav1.ObjectMeta{Name: "fedora"}},
	).Build()
	vm := func(itKind, prefName string) *virtv1.VirtualMachine {
		return &virtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "vm", Namespace: "ns"}, Spec: virtv1.VirtualMachineSpec{
			Instancetype: &virtv1.InstancetypeMatcher{Name: "small", Kind: itKind},
			Preference:   &virtv1.PreferenceMatcher{Name: prefName}}}
	}
	ctx := context.Background()

	ns, cl, err := instancetypes.Instancetype(ctx, r, vm("virtualmachineinstancetype", "fedora"))
	if err != nil || ns == nil || cl != nil {
		t.Errorf("namespaced kind: %v, %v, %v; want the namespaced object", ns, cl, err)
	}
	// An empty kind is the cluster-wide one, as in KubeVirt.
	ns, cl, err = instancetypes.Instancetype(ctx, r, vm("", "fedora"))
	if err != nil || ns != nil || cl == nil {
		t.Errorf("empty kind: %v, %v, %v; want the cluster-wide object", ns, cl, err)
	}
	p, cp, err := instancetypes.Preference(ctx, r, vm("", "fedora"))
	if err != nil || p != nil || cp == nil {
		t.Errorf("preference: %v, %v, %v; want the cluster-wide object", p, cp, err)
	}
	_, _, err = instancetypes.Preference(ctx, r, vm("", "missing"))
	if !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), "VirtualMachineClusterPreference missing") {
		t.Errorf("a missing preference: %v, want NotFound naming its kind and name", err)
	}
	if _, _, err := instancetypes.Instancetype(ctx, r, vm("flavour", "fedora")); err == nil {
		t.Error("an unknown kind was read")
	}
	none := vm("", "fedora")
	none.Spec.Instancetype = nil
	if ns, cl, err := instancetypes.Instancetype(ctx, r, none); ns != nil || cl != nil || err != nil {
		t.Errorf("no matcher: %v, %v, %v; want nothing", ns, cl, err)
	}
}
