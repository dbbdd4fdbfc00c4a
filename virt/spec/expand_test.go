package spec

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	virtv1 "kubevirt.io/api/core/v1"
)

func TestExpandVM(t *testing.T) {
	vm := validVM()
	vm.Spec.Template.Spec.Domain.Memory = nil
	vm.Spec.Template.Spec.Domain.Resources = virtv1.ResourceRequirements{}
	vm.Spec.Template.Spec.Domain.Devices.Interfaces = nil
	vm.Spec.Template.Spec.Networks = nil
	vm.Spec.Instancetype = &virtv1.InstancetypeMatcher{Name: "small", Kind: "VirtualMachineClusterInstancetype"}
	vm.Spec.Preference = &virtv1.PreferenceMatcher{Name: "q35", Kind: "VirtualMachineClusterPreference"}
	vm.Status.InstancetypeRef = &virtv1.InstancetypeStatusRef{Name: "small"}
	before := vm.DeepCopy()

	got, errs := ExpandVM(vm, smallIT(), prefWithMachine("pc-q35-9.0"))
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	s := got.Spec.Template.Spec
	if s.Domain.Memory == nil || s.Domain.Memory.Guest.String() != "2Gi" || s.Domain.CPU == nil || s.Domain.CPU.Sockets*s.Domain.CPU.Cores*s.Domain.CPU.Threads != 4 {
		t.Errorf("compute %+v %+v, want the instancetype's 4 vCPUs and 2Gi", s.Domain.CPU, s.Domain.Memory)
	}
	if s.Domain.Machine == nil || s.Domain.Machine.Type != "pc-q35-9.0" {
		t.Errorf("machine %+v, want the preference's", s.Domain.Machine)
	}
	if len(s.Networks) != 1 || s.Networks[0].Pod == nil || len(s.Domain.Devices.Interfaces) != 1 {
		t.Errorf("networks %+v interfaces %+v, want the pod network's", s.Networks, s.Domain.Devices.Interfaces)
	}
	if got.Spec.Instancetype != nil || got.Spec.Preference != nil || got.Status.InstancetypeRef != nil {
		t.Errorf("matchers left: %+v %+v %+v", got.Spec.Instancetype, got.Spec.Preference, got.Status.InstancetypeRef)
	}
	if d := cmp.Diff(before, vm); d != "" {
		t.Errorf("ExpandVM changed its input (-before +after):\n%s", d)
	}
	// The expanded VM is a valid VM on its own.
	if errs := ValidateVM(got); len(errs) > 0 {
		t.Errorf("the expanded VM is refused: %v", errs.ToAggregate())
	}

	// A template that sets what the instancetype sets is refused there.
	conflicting := vm.DeepCopy()
	conflicting.Spec.Template.Spec.Domain.Memory = &virtv1.Memory{Guest: qty("1Gi")}
	_, errs = ExpandVM(conflicting, smallIT(), nil)
	assertErrs(t, errs, forb("spec.template.spec.domain.memory"))

	// Without matchers: unchanged.
	plain := validVM()
	out, errs := ExpandVM(plain, nil, nil)
	if len(errs) > 0 || !cmp.Equal(plain, out) {
		t.Errorf("a VM without matchers changed: %v", cmp.Diff(plain, out))
	}
}
