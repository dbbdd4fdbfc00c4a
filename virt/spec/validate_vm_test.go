package spec

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	virtv1 "kubevirt.io/api/core/v1"
)

func validVM() *virtv1.VirtualMachine {
	vmi := userVMI()
	rs := virtv1.RunStrategyAlways
	return &virtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: "vm", Namespace: "default"},
		Spec: virtv1.VirtualMachineSpec{
			RunStrategy: &rs,
			Template:    &virtv1.VirtualMachineInstanceTemplateSpec{Spec: vmi.Spec},
		},
	}
}

func TestValidateVMRules(t *testing.T) {
	const ts = "spec.template.spec"
	dvVolume := func(vm *virtv1.VirtualMachine, name string) {
		vm.Spec.Template.Spec.Volumes[0].VolumeSource = virtv1.VolumeSource{DataVolume: &virtv1.DataVolumeSource{Name: name}}
	}
	for _, r := range []struct {
		name   string
		mutate func(*virtv1.VirtualMachine)
		opts   []Option
		want   []errKey
	}{
		{"valid", func(*virtv1.VirtualMachine) {}, nil, nil},
		{"running xor runStrategy", func(vm *virtv1.VirtualMachine) { vm.Spec.Running = boolPtr(true) }, nil, []errKey{inv("spec.running")}},
		{"running alone allowed", func(vm *virtv1.VirtualMachine) { vm.Spec.Running, vm.Spec.RunStrategy = boolPtr(true), nil }, nil, nil},
		{"runStrategy values", func(vm *virtv1.VirtualMachine) {
			rs := virtv1.VirtualMachineRunStrategy("Sometimes")
			vm.Spec.RunStrategy = &rs
		},
			nil, []errKey{nsup("spec.runStrategy")}},
		{"updateVolumesStrategy values", func(vm *virtv1.VirtualMachine) {
			u := virtv1.UpdateVolumesStrategy("x")
			vm.Spec.UpdateVolumesStrategy = &u
		},
			nil, []errKey{nsup("spec.updateVolumesStrategy")}},
		{"template required", func(vm *virtv1.VirtualMachine) { vm.Spec.Template = nil }, nil, []errKey{req("spec.template")}},
		{"template validated under spec.template.spec", func(vm *virtv1.VirtualMachine) {
			vm.Spec.Template.Spec.Domain.Devices.Disks[0].Cache = "unsafe"
		}, nil, []errKey{nsup(ts + ".domain.devices.disks[0].cache")}},
		{"template labels", func(vm *virtv1.VirtualMachine) { vm.Spec.Template.ObjectMeta.Labels = map[string]string{"a": "b c"} },
			nil, []errKey{inv("spec.template.metadata.labels")}},
		{"template volumes need no disk (added at VMI creation)", func(vm *virtv1.VirtualMachine) {
			vm.Spec.Template.Spec.Domain.Devices.Disks = vm.Spec.Template.Spec.Domain.Devices.Disks[:1]
		}, nil, nil},
		{"instancetype matcher needs a name", func(vm *virtv1.VirtualMachine) { vm.Spec.Instancetype = &virtv1.InstancetypeMatcher{} },
			nil, []errKey{req("spec.instancetype.name")}},
		{"instancetype matcher kind", func(vm *virtv1.VirtualMachine) {
			vm.Spec.Instancetype = &virtv1.InstancetypeMatcher{Name: "a", Kind: "VirtualMachinePreference"}
		}, nil, []errKey{nsup("spec.instancetype.kind")}},
		{"instancetype relaxes the memory rule", func(vm *virtv1.VirtualMachine) {
			vm.Spec.Instancetype = &virtv1.InstancetypeMatcher{Name: "a", Kind: "VirtualMachineInstancetype"}
			vm.Spec.Template.Spec.Domain.Memory = nil
		}, nil, nil},
		{"inferFromVolume", func(vm *virtv1.VirtualMachine) {
			vm.Spec.Preference = &virtv1.PreferenceMatcher{Name: "p", Kind: "virtualmachinepreference", InferFromVolume: "rootdisk"}
		}, nil, []errKey{forb("spec.preference.name"), forb("spec.preference.kind"), inv("spec.preference.inferFromVolume")}},
		{"inferFromVolume names a volume", func(vm *virtv1.VirtualMachine) {
			p := virtv1.InferFromVolumeFailurePolicy("Maybe")
			vm.Spec.Preference = &virtv1.PreferenceMatcher{InferFromVolume: "nope", InferFromVolumeFailurePolicy: &p}
		}, nil, []errKey{nf("spec.preference.inferFromVolume"), nsup("spec.preference.inferFromVolumeFailurePolicy")}},
		{"preference kind", func(vm *virtv1.VirtualMachine) { vm.Spec.Preference = &virtv1.PreferenceMatcher{Name: "p", Kind: "x"} },
			nil, []errKey{nsup("spec.preference.kind")}},
		{"instancetype conflicts reported", func(vm *virtv1.VirtualMachine) {
			vm.Spec.Instancetype = &virtv1.InstancetypeMatcher{Name: "small"}
		}, []Option{WithInstancetype(smallIT())}, []errKey{forb(ts + ".domain.memory")}},
		{"expanded template validated", func(vm *virtv1.VirtualMachine) {
			vm.Spec.Instancetype = &virtv1.InstancetypeMatcher{Name: "small"}
			vm.Spec.Template.Spec.Domain.Memory = nil
		}, []Option{WithInstancetype(smallIT()), WithPreference(prefWithMachine("pc-i440fx-2.0"))},
			[]errKey{nsup(ts + ".domain.machine.type")}},
		{"dataVolumeTemplates names unique and used", func(vm *virtv1.VirtualMachine) {
			dvVolume(vm, "dv1")
			vm.Spec.DataVolumeTemplates = []virtv1.DataVolumeTemplateSpec{
				{ObjectMeta: metav1.ObjectMeta{Name: "dv1"}}, {ObjectMeta: metav1.ObjectMeta{Name: "dv1"}},
				{ObjectMeta: metav1.ObjectMeta{Name: "orphan"}}, {},
			}
		}, nil, []errKey{dup("spec.dataVolumeTemplates[1].metadata.name"), inv("spec.dataVolumeTemplates[2].metadata.name"),
			req("spec.dataVolumeTemplates[3].metadata.name")}},
		{"dataVolumeTemplates namespace", func(vm *virtv1.VirtualMachine) {
			dvVolume(vm, "dv1")
			vm.Spec.DataVolumeTemplates = []virtv1.DataVolumeTemplateSpec{{ObjectMeta: metav1.ObjectMeta{Name: "dv1", Namespace: "other"}}}
		}, nil, []errKey{inv("spec.dataVolumeTemplates[0].metadata.namespace")}},
	} {
		t.Run(r.name, func(t *testing.T) {
			vm := validVM()
			r.mutate(vm)
			assertErrs(t, ValidateVM(vm, r.opts...), r.want...)
		})
	}
}

// TestVMToVMI runs the whole path a VM takes: default, validate, build the
// VMI, expand, default, validate.
func TestVMToVMI(t *testing.T) {
	vm := validVM()
	vm.Spec.Template.Spec.Domain.Memory = nil
	vm.Spec.Instancetype = &virtv1.InstancetypeMatcher{Name: "small"}
	it, pref := smallIT(), topo("cores")
	DefaultVM(vm, WithInstancetype(it), WithPreference(pref))
	assertErrs(t, ValidateVM(vm, WithInstancetype(it), WithPreference(pref)))
	vmi := NewVMIFromVM(vm)
	assertErrs(t, ApplyInstancetype(&vmi.Spec, nil, it, pref))
	DefaultVMI(vmi)
	assertErrs(t, ValidateVMI(vmi))
	if c := vmi.Spec.Domain.CPU; c.Cores != 4 || c.Sockets != 1 {
		t.Errorf("cpu %+v", c)
	}
}
