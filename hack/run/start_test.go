package main

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
)

func TestStartDecision(t *testing.T) {
	now := metav1.Now()
	vmOf := func(rs virtv1.VirtualMachineRunStrategy, edit ...func(*virtv1.VirtualMachine)) *virtv1.VirtualMachine {
		vm := &virtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "tiny"}}
		vm.Spec.RunStrategy = &rs
		vm.Status.RunStrategy = rs
		for _, e := range edit {
			e(vm)
		}
		return vm
	}
	running := func(r bool) func(*virtv1.VirtualMachine) {
		return func(vm *virtv1.VirtualMachine) { vm.Spec.RunStrategy, vm.Spec.Running = nil, &r }
	}
	vmiIn := func(phase virtv1.VirtualMachineInstancePhase, deleting bool) *virtv1.VirtualMachineInstance {
		vmi := &virtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "tiny", UID: "u1"}}
		vmi.Status.Phase = phase
		if deleting {
			vmi.DeletionTimestamp = &now
		}
		return vmi
	}
	uid := vmiIn(virtv1.Running, false).UID
	for _, tc := range []struct {
		name string
		vm   *virtv1.VirtualMachine
		vmi  *virtv1.VirtualMachineInstance
		want startAction
	}{
		{"Always, no VMI yet", vmOf(virtv1.RunStrategyAlways), nil, awaitRun},
		{"Always, running", vmOf(virtv1.RunStrategyAlways), vmiIn(virtv1.Running, false), awaitRun},
		{"Always, VMI ended", vmOf(virtv1.RunStrategyAlways), vmiIn(virtv1.Succeeded, false), awaitRun},
		{"running: true", vmOf("", running(true)), nil, awaitRun},

		{"Halted (virtctl stop), no VMI", vmOf(virtv1.RunStrategyHalted), nil, startVM},
		{"Halted, VMI ended", vmOf(virtv1.RunStrategyHalted), vmiIn(virtv1.Succeeded, false), startVM},
		{"Halted, VMI still shutting down", vmOf(virtv1.RunStrategyHalted), vmiIn(virtv1.Running, true), awaitStop},
		{"Halted, VMI not deleted yet", vmOf(virtv1.RunStrategyHalted), vmiIn(virtv1.Running, false), awaitStop},
		{"running: false", vmOf("", running(false)), nil, startVM},
		{"Halted, start already queued", vmOf(virtv1.RunStrategyHalted, func(vm *virtv1.VirtualMachine) {
			vm.Status.StateChangeRequests = []virtv1.VirtualMachineStateChangeRequest{{Action: virtv1.StartRequest}}
		}), nil, awaitRun},

		{"Manual, never started", vmOf(virtv1.RunStrategyManual), nil, startVM},
		{"Manual, VMI ended", vmOf(virtv1.RunStrategyManual), vmiIn(virtv1.Failed, false), startVM},
		{"Manual, running", vmOf(virtv1.RunStrategyManual), vmiIn(virtv1.Running, false), awaitRun},
		{"Manual, VMI shutting down", vmOf(virtv1.RunStrategyManual), vmiIn(virtv1.Running, true), awaitStop},
		{"Manual, stop queued", vmOf(virtv1.RunStrategyManual, func(vm *virtv1.VirtualMachine) {
			vm.Status.StateChangeRequests = []virtv1.VirtualMachineStateChangeRequest{{Action: virtv1.StopRequest, UID: &uid}}
		}), vmiIn(virtv1.Running, false), awaitRun},

		{"RerunOnFailure, new VM", vmOf(virtv1.RunStrategyRerunOnFailure, func(vm *virtv1.VirtualMachine) { vm.Status.RunStrategy = "" }), nil, awaitRun},
		{"RerunOnFailure, stopped and gone", vmOf(virtv1.RunStrategyRerunOnFailure), nil, startVM},
		{"RerunOnFailure, VMI succeeded", vmOf(virtv1.RunStrategyRerunOnFailure), vmiIn(virtv1.Succeeded, false), startVM},
		{"RerunOnFailure, VMI failed", vmOf(virtv1.RunStrategyRerunOnFailure), vmiIn(virtv1.Failed, false), awaitRun},
		{"RerunOnFailure, VMI shutting down", vmOf(virtv1.RunStrategyRerunOnFailure), vmiIn(virtv1.Running, true), awaitStop},
		{"RerunOnFailure, running", vmOf(virtv1.RunStrategyRerunOnFailure), vmiIn(virtv1.Running, false), awaitRun},

		{"Once, no VMI yet", vmOf(virtv1.RunStrategyOnce), nil, awaitRun},
		{"Once, running", vmOf(virtv1.RunStrategyOnce), vmiIn(virtv1.Running, false), awaitRun},
		{"Once, VMI ended", vmOf(virtv1.RunStrategyOnce), vmiIn(virtv1.Succeeded, false), cannotStart},

		{"VM being deleted", vmOf(virtv1.RunStrategyHalted, func(vm *virtv1.VirtualMachine) { vm.DeletionTimestamp = &now }), nil, cannotStart},
		{"both running and runStrategy", vmOf(virtv1.RunStrategyAlways, func(vm *virtv1.VirtualMachine) { r := true; vm.Spec.Running = &r }), nil, cannotStart},
		{"unknown strategy", vmOf("Sometimes"), nil, cannotStart},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why := startDecision(tc.vm, tc.vmi)
			if got != tc.want {
				t.Errorf("startDecision = %v (%s), want %v", got, why, tc.want)
			}
			if got != awaitRun && why == "" {
				t.Errorf("startDecision = %v with no reason", got)
			}
		})
	}
}
