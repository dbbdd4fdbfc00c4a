package main

import (
	"fmt"

	virtv1 "kubevirt.io/api/core/v1"
)

// startAction is what make run does about its VM before it runs.
type startAction int

const (
	// awaitRun: the VM runs, or its controller is bringing it up (its run
	// strategy does, or a queued state change request will): wait.
	awaitRun startAction = iota
	// awaitStop: the VM is stopped but its old VMI is still shutting
	// down; a start now would be refused as "already running".
	awaitStop
	// startVM: the VM is stopped and stays so: start it as virtctl start
	// does (PUT .../virtualmachines/NAME/start).
	startVM
	// cannotStart: nothing will run the VM.
	cannotStart
)

// startDecision is what make run does about vm, given its VMI (nil when
// there is none), and why. It follows what KubeVirt's VM controller does
// for each run strategy, and what its start verb accepts:
//
//	Always          the controller keeps a VMI running
//	Halted          stopped: start (the verb switches the VM to Always)
//	Manual          stopped when no VMI runs: start (the verb queues a Start)
//	RerunOnFailure  stopped when its VMI succeeded, or was stopped and is
//	                gone: start; a failed VMI is rerun by the controller
//	Once            the controller runs it once; it is not started again
//
// A VMI being deleted that has not ended yet is waited for, as is any
// state change request already queued on the VM.
func startDecision(vm *virtv1.VirtualMachine, vmi *virtv1.VirtualMachineInstance) (startAction, string) {
	if vm.DeletionTimestamp != nil {
		return cannotStart, "the VirtualMachine is being deleted"
	}
	rs, err := vm.RunStrategy()
	if err != nil {
		return cannotStart, fmt.Sprintf("spec.running and spec.runStrategy: %v", err)
	}
	if len(vm.Status.StateChangeRequests) > 0 {
		return awaitRun, fmt.Sprintf("a %s request is queued", vm.Status.StateChangeRequests[0].Action)
	}
	ended := vmi != nil && vmi.IsFinal()
	stopping := vmi != nil && !ended && vmi.DeletionTimestamp != nil
	stopped := fmt.Sprintf("stopped (runStrategy %s)", rs)
	switch rs {
	case virtv1.RunStrategyAlways:
		if ended {
			return awaitRun, "its VMI ended; runStrategy Always starts a new one"
		}
		return awaitRun, ""
	case virtv1.RunStrategyHalted:
		if vmi != nil && !ended {
			return awaitStop, stopped + ", its VMI is shutting down"
		}
		return startVM, stopped
	case virtv1.RunStrategyManual:
		switch {
		case vmi == nil || ended:
			return startVM, stopped
		case stopping:
			return awaitStop, stopped + ", its VMI is shutting down"
		}
		return awaitRun, ""
	case virtv1.RunStrategyRerunOnFailure:
		switch {
		case vmi == nil && vm.Status.RunStrategy != rs:
			// Not started under this strategy yet: the controller does.
			return awaitRun, ""
		case vmi == nil || (ended && vmi.Status.Phase == virtv1.Succeeded):
			return startVM, stopped
		case ended:
			return awaitRun, "its VMI failed; runStrategy RerunOnFailure starts a new one"
		case stopping:
			return awaitStop, stopped + ", its VMI is shutting down"
		}
		return awaitRun, ""
	case virtv1.RunStrategyOnce:
		if ended {
			return cannotStart, fmt.Sprintf("its VMI ended (%s) and runStrategy Once does not start it again; delete the VM and run again", vmi.Status.Phase)
		}
		return awaitRun, ""
	}
	return cannotStart, fmt.Sprintf("runStrategy %q is not one of Always, Halted, Manual, RerunOnFailure, Once", rs)
}
