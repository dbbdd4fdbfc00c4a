package admission_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	instancetypev1beta1 "kubevirt.io/api/instancetype/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/virtkit/virtkit/internal/scheme"
	"github.com/virtkit/virtkit/virt/spec"
	"github.com/virtkit/virtkit/virtapi/admission"
)

// A VM's template is checked against the instancetype it names, when that
// can be read; one that cannot is left to the VM controller, as in KubeVirt.
func TestVMTemplateAgainstItsInstancetype(t *testing.T) {
	it := &instancetypev1beta1.VirtualMachineClusterInstancetype{ObjectMeta: metav1.ObjectMeta{Name: "small"},
		Spec: instancetypev1beta1.VirtualMachineInstancetypeSpec{
			CPU:    instancetypev1beta1.CPUInstancetype{Guest: 2},
			Memory: instancetypev1beta1.MemoryInstancetype{Guest: resource.MustParse("256Mi")},
		}}
	s := scheme.New()
	v := admission.NewValidator(s, admission.WithInstancetypes(fake.NewClientBuilder().WithScheme(s).WithObjects(it).Build()))
	sized := func(name string, edit func(*virtv1.VirtualMachineInstanceSpec)) *virtv1.VirtualMachine {
		tmpl := minimalVMI("x").Spec
		tmpl.Domain.Resources = virtv1.ResourceRequirements{}
		edit(&tmpl)
		return &virtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "vm", Namespace: "default"},
			Spec: virtv1.VirtualMachineSpec{RunStrategy: new(virtv1.RunStrategyAlways),
				Instancetype: &virtv1.InstancetypeMatcher{Name: name, Kind: spec.KindClusterInstancetype},
				Template:     &virtv1.VirtualMachineInstanceTemplateSpec{Spec: tmpl}}}
	}
	for _, tc := range []struct {
		name string
		vm   *virtv1.VirtualMachine
		want []string
	}{
		{name: "sized by it alone", vm: sized("small", func(*virtv1.VirtualMachineInstanceSpec) {})},
		{name: "memory of its own too", vm: sized("small", func(s *virtv1.VirtualMachineInstanceSpec) {
			s.Domain.Memory = &virtv1.Memory{Guest: new(resource.MustParse("1Gi"))}
		}), want: []string{"FieldValueForbidden spec.template.spec.domain.memory"}},
		{name: "an instancetype not created yet", vm: sized("later", func(s *virtv1.VirtualMachineInstanceSpec) {
			s.Domain.Memory = &virtv1.Memory{Guest: new(resource.MustParse("1Gi"))}
		})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := refusals(t, v.Handle(context.Background(), review(t, "alice", tc.vm, nil)))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("refusals (-want +got):\n%s", diff)
			}
		})
	}
}
