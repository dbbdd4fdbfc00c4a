package instancetypes_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
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

// Infer resolves inferFromVolume matchers from the labels of the volume's
// claim, as KubeVirt's VM admission does.
func TestInfer(t *testing.T) {
	ctx := context.Background()
	labelled := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "fedora-root", Namespace: "ns", Labels: map[string]string{
		"instancetype.kubevirt.io/default-instancetype": "u1.medium", "instancetype.kubevirt.io/default-preference": "fedora",
		"instancetype.kubevirt.io/default-preference-kind": "VirtualMachinePreference"}}}
	bare := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "bare", Namespace: "ns"}}
	r := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(labelled, bare).Build()
	ignore := virtv1.IgnoreInferFromVolumeFailure
	vm := func(volume virtv1.VolumeSource, policy *virtv1.InferFromVolumeFailurePolicy) *virtv1.VirtualMachine {
		return &virtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "vm", Namespace: "ns"}, Spec: virtv1.VirtualMachineSpec{
			Instancetype: &virtv1.InstancetypeMatcher{InferFromVolume: "root", InferFromVolumeFailurePolicy: policy},
			Preference:   &virtv1.PreferenceMatcher{InferFromVolume: "root", InferFromVolumeFailurePolicy: policy},
			Template: &virtv1.VirtualMachineInstanceTemplateSpec{Spec: virtv1.VirtualMachineInstanceSpec{
				Domain:  virtv1.DomainSpec{Memory: &virtv1.Memory{Guest: ptrQty("1Gi")}},
				Volumes: []virtv1.Volume{{Name: "root", VolumeSource: volume}}}}}}
	}
	claim := func(name string) virtv1.VolumeSource {
		return virtv1.VolumeSource{PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}}
	}

	got := vm(claim("fedora-root"), nil)
	if err := instancetypes.Infer(ctx, r, got); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(&virtv1.InstancetypeMatcher{Name: "u1.medium"}, got.Spec.Instancetype); d != "" {
		t.Errorf("instancetype (-want +got):\n%s", d)
	}
	if d := cmp.Diff(&virtv1.PreferenceMatcher{Name: "fedora", Kind: "VirtualMachinePreference"}, got.Spec.Preference); d != "" {
		t.Errorf("preference (-want +got):\n%s", d)
	}
	// A dataVolume volume without a template reads the claim of its name.
	got = vm(virtv1.VolumeSource{DataVolume: &virtv1.DataVolumeSource{Name: "fedora-root"}}, &ignore)
	if err := instancetypes.Infer(ctx, r, got); err != nil || got.Spec.Instancetype.Name != "u1.medium" || got.Spec.Template.Spec.Domain.Memory != nil {
		t.Errorf("dataVolume: %v, %+v, memory %+v; want u1.medium and the template's memory dropped (Ignore)", err, got.Spec.Instancetype, got.Spec.Template.Spec.Domain.Memory)
	}
	// No label: an error, or with Ignore no matcher.
	if err := instancetypes.Infer(ctx, r, vm(claim("bare"), nil)); err == nil || !strings.Contains(err.Error(), "spec.instancetype.inferFromVolume") {
		t.Errorf("unlabelled claim: %v, want an error naming spec.instancetype.inferFromVolume", err)
	}
	got = vm(claim("bare"), &ignore)
	if err := instancetypes.Infer(ctx, r, got); err != nil || got.Spec.Instancetype != nil || got.Spec.Preference != nil {
		t.Errorf("unlabelled claim, Ignore: %v, %+v, %+v; want no matchers", err, got.Spec.Instancetype, got.Spec.Preference)
	}
	// A missing claim is not ignorable; nor is a volume that is not there.
	if err := instancetypes.Infer(ctx, r, vm(claim("missing"), &ignore)); !apierrors.IsNotFound(err) {
		t.Errorf("missing claim: %v, want NotFound", err)
	}
	noVolume := vm(claim("fedora-root"), &ignore)
	noVolume.Spec.Instancetype.InferFromVolume = "data"
	if err := instancetypes.Infer(ctx, r, noVolume); err == nil || !strings.Contains(err.Error(), `no volume "data"`) {
		t.Errorf("no such volume: %v", err)
	}
}

func ptrQty(s string) *resource.Quantity { q := resource.MustParse(s); return &q }
