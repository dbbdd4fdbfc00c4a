package instancetypes_test

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	instancetypev1beta1 "kubevirt.io/api/instancetype/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/virtkit/virtkit/internal/scheme"
	"github.com/virtkit/virtkit/virt/instancetypes"
	"github.com/virtkit/virtkit/virt/spec"
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

// A VM that started keeps the instancetype it started with: Specs reads the
// revision its status names, not the object edited since; a VM that did
// not start yet reads the object.
func TestSpecsFollowTheStoredRevision(t *testing.T) {
	ctx := context.Background()
	small := &instancetypev1beta1.VirtualMachineClusterInstancetype{ObjectMeta: metav1.ObjectMeta{Name: "small"},
		Spec: instancetypev1beta1.VirtualMachineInstancetypeSpec{CPU: instancetypev1beta1.CPUInstancetype{Guest: 1},
			Memory: instancetypev1beta1.MemoryInstancetype{Guest: resource.MustParse("128Mi")}}}
	vm := &virtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "vm", Namespace: "ns", UID: "vm-uid"},
		Spec: virtv1.VirtualMachineSpec{Instancetype: &virtv1.InstancetypeMatcher{Name: "small", Kind: "virtualmachineclusterinstancetype"}}}
	rev, err := spec.NewInstancetypeRevision(vm, nil, small)
	if err != nil {
		t.Fatal(err)
	}
	rev.Namespace = "ns"
	edited := small.DeepCopy()
	edited.Spec.Memory.Guest = resource.MustParse("1Gi")
	r := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(edited, rev).Build()

	it, pref, err := instancetypes.Specs(ctx, r, vm)
	if err != nil || pref != nil || it.Memory.Guest.String() != "1Gi" {
		t.Errorf("before starting: %+v, %v, %v; want the object's 1Gi", it, pref, err)
	}
	vm.Status.InstancetypeRef = &virtv1.InstancetypeStatusRef{Name: "small", Kind: "virtualmachineclusterinstancetype",
		ControllerRevisionRef: &virtv1.ControllerRevisionRef{Name: rev.Name}}
	it, _, err = instancetypes.Specs(ctx, r, vm)
	if err != nil || it.Memory.Guest.String() != "128Mi" {
		t.Errorf("started: %+v, %v; want the revision's 128Mi", it, err)
	}
	// The matcher names another object now: the object again.
	vm.Spec.Instancetype.Name = "missing"
	if _, _, err := instancetypes.Specs(ctx, r, vm); !apierrors.IsNotFound(err) {
		t.Errorf("renamed matcher: %v, want the new object's NotFound", err)
	}
}
