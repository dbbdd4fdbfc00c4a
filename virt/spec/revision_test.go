package spec_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	apiinstancetype "kubevirt.io/api/instancetype"
	instancetypev1beta1 "kubevirt.io/api/instancetype/v1beta1"

	"github.com/virtkit/virtkit/virt/spec"
)

func TestInstancetypeRevisionRoundTrip(t *testing.T) {
	vm := &virtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "vm1", Namespace: "ns", UID: "vm-uid"}}
	cit := &instancetypev1beta1.VirtualMachineClusterInstancetype{
		ObjectMeta: metav1.ObjectMeta{Name: "u1.small", UID: "it-uid", Generation: 3,
			Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"c": "d"}},
		Spec: instancetypev1beta1.VirtualMachineInstancetypeSpec{
			CPU:    instancetypev1beta1.CPUInstancetype{Guest: 1},
			Memory: instancetypev1beta1.MemoryInstancetype{Guest: resource.MustParse("2Gi")},
		},
	}
	rev, err := spec.NewInstancetypeRevision(vm, nil, cit)
	if err != nil {
		t.Fatal(err)
	}
	if want := "vm1-u1.small-v1beta1-it-uid-3"; rev.Name != want || rev.Namespace != "ns" {
		t.Errorf("revision %s/%s, want ns/%s", rev.Namespace, rev.Name, want)
	}
	wantLabels := map[string]string{
		apiinstancetype.ControllerRevisionObjectGenerationLabel: "3",
		apiinstancetype.ControllerRevisionObjectKindLabel:       spec.KindClusterInstancetype,
		apiinstancetype.ControllerRevisionObjectNameLabel:       "u1.small",
		apiinstancetype.ControllerRevisionObjectUIDLabel:        "it-uid",
		apiinstancetype.ControllerRevisionObjectVersionLabel:    "v1beta1",
	}
	if diff := cmp.Diff(wantLabels, rev.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if len(rev.OwnerReferences) != 1 || rev.OwnerReferences[0].UID != "vm-uid" || rev.OwnerReferences[0].Controller == nil || !*rev.OwnerReferences[0].Controller {
		t.Errorf("owners %+v, want the VM as controller", rev.OwnerReferences)
	}
	if cit.Labels == nil || cit.TypeMeta.Kind != "" {
		t.Error("the caller's instancetype was changed")
	}
	got, err := spec.InstancetypeFromRevision(rev)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&cit.Spec, got); diff != "" {
		t.Errorf("spec read back (-want +got):\n%s", diff)
	}
	if _, err := spec.PreferenceFromRevision(rev); !errors.Is(err, spec.ErrRevisionData) {
		t.Errorf("an instancetype read as a preference: %v, want ErrRevisionData", err)
	}
	old := &appsv1.ControllerRevision{Data: rev.Data}
	old.Data.Raw = []byte(`{"apiVersion":"instancetype.kubevirt.io/v1alpha1","kind":"VirtualMachineClusterInstancetype","spec":{}}`)
	if _, err := spec.InstancetypeFromRevision(old); !errors.Is(err, spec.ErrRevisionData) {
		t.Errorf("a v1alpha1 revision: %v, want ErrRevisionData", err)
	}
}

func TestPreferenceRevisionRoundTrip(t *testing.T) {
	vm := &virtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "vm1", Namespace: "ns", UID: "vm-uid"}}
	cores := instancetypev1beta1.Cores
	pref := &instancetypev1beta1.VirtualMachinePreference{
		ObjectMeta: metav1.ObjectMeta{Name: "fedora", Namespace: "ns", UID: "p-uid", Generation: 1},
		Spec: instancetypev1beta1.VirtualMachinePreferenceSpec{
			CPU: &instancetypev1beta1.CPUPreferences{PreferredCPUTopology: &cores},
		},
	}
	rev, err := spec.NewPreferenceRevision(vm, pref, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rev.Labels[apiinstancetype.ControllerRevisionObjectKindLabel] != spec.KindPreference {
		t.Errorf("kind label %q", rev.Labels[apiinstancetype.ControllerRevisionObjectKindLabel])
	}
	got, err := spec.PreferenceFromRevision(rev)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&pref.Spec, got); diff != "" {
		t.Errorf("spec read back (-want +got):\n%s", diff)
	}
}
