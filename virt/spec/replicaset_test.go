package spec

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	virtv1 "kubevirt.io/api/core/v1"
)

func validReplicaSet() *virtv1.VirtualMachineInstanceReplicaSet {
	vmi := userVMI()
	three := int32(3)
	return &virtv1.VirtualMachineInstanceReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: types.UID("rs-uid")},
		Spec: virtv1.VirtualMachineInstanceReplicaSetSpec{
			Replicas: &three,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: &virtv1.VirtualMachineInstanceTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", "tier": "front"}},
				Spec:       vmi.Spec,
			},
		},
	}
}

func TestValidateReplicaSetRules(t *testing.T) {
	const ts = "spec.template.spec"
	for _, r := range []struct {
		name   string
		mutate func(*virtv1.VirtualMachineInstanceReplicaSet)
		want   []errKey
	}{
		{"valid", func(*virtv1.VirtualMachineInstanceReplicaSet) {}, nil},
		{"replicas unset means one", func(rs *virtv1.VirtualMachineInstanceReplicaSet) { rs.Spec.Replicas = nil }, nil},
		{"negative replicas", func(rs *virtv1.VirtualMachineInstanceReplicaSet) { n := int32(-1); rs.Spec.Replicas = &n },
			[]errKey{inv("spec.replicas")}},
		{"template required", func(rs *virtv1.VirtualMachineInstanceReplicaSet) { rs.Spec.Template = nil }, []errKey{req("spec.template")}},
		{"selector required", func(rs *virtv1.VirtualMachineInstanceReplicaSet) { rs.Spec.Selector = nil }, []errKey{req("spec.selector")}},
		{"empty selector refused", func(rs *virtv1.VirtualMachineInstanceReplicaSet) { rs.Spec.Selector = &metav1.LabelSelector{} },
			[]errKey{req("spec.selector")}},
		{"selector must match the template", func(rs *virtv1.VirtualMachineInstanceReplicaSet) {
			rs.Spec.Selector.MatchLabels = map[string]string{"app": "db"}
		}, []errKey{inv("spec.selector")}},
		{"selector expressions", func(rs *virtv1.VirtualMachineInstanceReplicaSet) {
			rs.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"front", "back"}}}}
		}, nil},
		{"selector that does not parse", func(rs *virtv1.VirtualMachineInstanceReplicaSet) {
			rs.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Near"}}}
		}, []errKey{inv("spec.selector")}},
		{"template validated under spec.template.spec", func(rs *virtv1.VirtualMachineInstanceReplicaSet) {
			rs.Spec.Template.Spec.Domain.Devices.Disks[0].Cache = "unsafe"
		}, []errKey{nsup(ts + ".domain.devices.disks[0].cache")}},
		{"template labels", func(rs *virtv1.VirtualMachineInstanceReplicaSet) {
			rs.Spec.Template.ObjectMeta.Labels["bad"] = "a b"
		}, []errKey{inv("spec.template.metadata.labels")}},
	} {
		t.Run(r.name, func(t *testing.T) {
			rs := validReplicaSet()
			r.mutate(rs)
			assertErrs(t, ValidateReplicaSet(rs), r.want...)
		})
	}
	assertErrs(t, ValidateReplicaSet(nil), req("spec"))
}

func TestNewVMIFromReplicaSet(t *testing.T) {
	rs := validReplicaSet()
	rs.Spec.Template.ObjectMeta.Annotations = map[string]string{"note": "x"}
	vmi := NewVMIFromReplicaSet(rs)
	yes := true
	want := metav1.ObjectMeta{
		GenerateName: "web",
		Namespace:    "default",
		Labels:       map[string]string{"app": "web", "tier": "front"},
		Annotations:  map[string]string{"note": "x"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstanceReplicaSet",
			Name: "web", UID: "rs-uid", Controller: &yes, BlockOwnerDeletion: &yes}},
	}
	if d := cmp.Diff(want, vmi.ObjectMeta); d != "" {
		t.Errorf("metadata (-want +got):\n%s", d)
	}
	// The VMI's maps are its own.
	vmi.Labels["app"] = "changed"
	if rs.Spec.Template.ObjectMeta.Labels["app"] != "web" {
		t.Error("changing the VMI's labels changed the template's")
	}
	if vmi.Spec.Domain.Firmware != nil && vmi.Spec.Domain.Firmware.UUID != "" {
		t.Errorf("firmware UUID %q before the VMI has a name", vmi.Spec.Domain.Firmware.UUID)
	}

	for _, r := range []struct {
		name, templateName, generateName, want string
	}{
		{"the replica set's name", "", "", "web"},
		{"the template's generateName", "", "front-", "front-"},
		{"the template's name first", "front", "front-", "front"},
	} {
		rs := validReplicaSet()
		rs.Spec.Template.ObjectMeta.Name, rs.Spec.Template.ObjectMeta.GenerateName = r.templateName, r.generateName
		if got := ReplicaSetBaseName(rs); got != r.want {
			t.Errorf("%s: ReplicaSetBaseName = %q, want %q", r.name, got, r.want)
		}
	}
	if NewVMIFromReplicaSet(&virtv1.VirtualMachineInstanceReplicaSet{}) != nil {
		t.Error("a replica set without a template gave a VMI")
	}
}
