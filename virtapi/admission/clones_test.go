package admission_test

import (
	"context"
	"encoding/json"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clonev1 "kubevirt.io/api/clone/v1beta1"

	"github.com/virtkit/virtkit/internal/scheme"
	"github.com/virtkit/virtkit/virtapi/admission"
)

// A clone that names no target gets clone-SOURCE-XXXXX; one that names
// one keeps it. A clone is refused with the fields that are wrong, and
// keeps its spec.
func TestClonesAreDefaultedAndValidated(t *testing.T) {
	vmRef := func(name string) *corev1.TypedLocalObjectReference {
		return &corev1.TypedLocalObjectReference{APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: name}
	}
	cloneOf := func(target *corev1.TypedLocalObjectReference, mod func(*clonev1.VirtualMachineClone)) *clonev1.VirtualMachineClone {
		c := &clonev1.VirtualMachineClone{ObjectMeta: metav1.ObjectMeta{Name: "c1", Namespace: "default"},
			Spec: clonev1.VirtualMachineCloneSpec{Source: vmRef("db"), Target: target}}
		if mod != nil {
			mod(c)
		}
		return c
	}

	d := admission.NewDefaulter(scheme.New())
	resp := d.Handle(context.Background(), review(t, "alice", cloneOf(nil, nil), nil))
	if !resp.Allowed || len(resp.Patches) != 1 || resp.Patches[0].Path != "/spec/target" {
		t.Fatalf("defaulting a clone without a target: %+v", resp)
	}
	b, _ := json.Marshal(resp.Patches[0].Value)
	target := corev1.TypedLocalObjectReference{}
	if err := json.Unmarshal(b, &target); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^clone-db-[a-z0-9]{5}$`).MatchString(target.Name) || target.Kind != "VirtualMachine" || ptr.Deref(target.APIGroup, "") != "kubevirt.io" {
		t.Errorf("defaulted target %+v", target)
	}
	if resp := d.Handle(context.Background(), review(t, "alice", cloneOf(vmRef("copy"), nil), nil)); !resp.Allowed || len(resp.Patches) != 0 {
		t.Errorf("defaulting a clone with a target: %+v", resp)
	}

	v := admission.NewValidator(scheme.New())
	for _, tc := range []struct {
		name     string
		obj, old *clonev1.VirtualMachineClone
		want     []string
	}{
		{"a clone of a VM", cloneOf(vmRef("copy"), nil), nil, nil},
		{"a clone onto its source", cloneOf(vmRef("db"), nil), nil, []string{"FieldValueInvalid spec.target.name"}},
		{"bad filters and MACs", cloneOf(vmRef("copy"), func(c *clonev1.VirtualMachineClone) {
			c.Spec.LabelFilters = []string{"a*b"}
			c.Spec.NewMacAddresses = map[string]string{"default": "nope"}
		}), nil, []string{"FieldValueInvalid spec.labelFilters[0]", "FieldValueInvalid spec.newMacAddresses[default]"}},
		{"a spec changed", cloneOf(vmRef("other"), nil), cloneOf(vmRef("copy"), nil), []string{"FieldValueForbidden spec"}},
	} {
		// A nil *VirtualMachineClone is not a nil runtime.Object.
		req := review(t, "alice", tc.obj, nil)
		if tc.old != nil {
			req = review(t, "alice", tc.obj, tc.old)
		}
		if diff := cmp.Diff(tc.want, refusals(t, v.Handle(context.Background(), req))); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}
