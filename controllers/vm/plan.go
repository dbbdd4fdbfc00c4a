package vm

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
)

// Plan is what one reconcile does to the VMI of a VM. At most one of Create,
// Delete and SetAlways is set.
type Plan struct {
	// Create: create the VMI from the VM's template.
	Create bool
	// Delete: delete the current VMI (graceful; the VMI controller and the
	// handler shut the guest down).
	Delete bool
	// AddStartRequest: append a Start request to status.stateChangeRequests,
	// as KubeVirt does for RerunOnFailure after a failure, so the next
	// reconcile starts a new VMI once the failed one is gone.
	AddStartRequest bool
	// SetAlways: a Halted VM got a start request; switch its spec to Always
	// (or running: true), as KubeVirt does.
	SetAlways bool
	// RequeueAfter: a start waits for the start-failure backoff.
	RequeueAfter time.Duration
}

// ErrRunStrategy is returned by Plan for a VM whose run strategy is invalid.
var ErrRunStrategy = fmt.Errorf("invalid run strategy")

// PlanFor decides, as KubeVirt's syncRunStrategy does, what to do with the
// VMI of vm given the VMI as observed (nil when there is none) at time now.
// A VM being deleted is treated as Halted unless it orphans its dependents.
func PlanFor(vm *virtv1.VirtualMachine, vmi *virtv1.VirtualMachineInstance, now time.Time) (Plan, error) {
	deletable := vmi != nil && vmi.DeletionTimestamp == nil
	if vm.DeletionTimestamp != nil {
		return Plan{Delete: deletable && !orphans(vm)}, nil
	}
	strategy, err := runStrategy(vm)
	if err != nil {
		return Plan{}, err
	}
	start := func() Plan {
		if left := backoffLeft(vm, now); left > 0 {
			return Plan{RequeueAfter: left}
		}
		return Plan{Create: true}
	}
	switch strategy {
	case virtv1.RunStrategyAlways:
		if vmi == nil {
			return start(), nil
		}
		// A stop request under Always is a restart: delete, then recreate.
		return Plan{Delete: deletable && (hasStopRequestFor(vm, vmi) || vmi.IsFinal())}, nil
	case virtv1.RunStrategyRerunOnFailure:
		if vmi == nil {
			// Start when asked to, or when coming from another strategy.
			if !hasStartRequest(vm) && vm.Status.RunStrategy == strategy {
				return Plan{}, nil
			}
			return start(), nil
		}
		failed := vmi.Status.Phase == virtv1.Failed
		if deletable && (hasStopRequestFor(vm, vmi) || failed || vmi.Status.Phase == virtv1.Succeeded) {
			return Plan{Delete: true, AddStartRequest: failed}, nil
		}
		return Plan{}, nil
	case virtv1.RunStrategyManual:
		if vmi == nil {
			return Plan{Create: hasStartRequest(vm)}, nil
		}
		return Plan{Delete: deletable && hasStopRequestFor(vm, vmi)}, nil
	case virtv1.RunStrategyHalted:
		if vmi == nil {
			return Plan{SetAlways: hasStartRequest(vm)}, nil
		}
		return Plan{Delete: deletable}, nil
	case virtv1.RunStrategyOnce:
		// Once never restarts a VMI that ended; it stays until deleted.
		return Plan{Create: vmi == nil}, nil
	}
	return Plan{}, fmt.Errorf("%w %q: not one of Always, RerunOnFailure, Manual, Halted, Once", ErrRunStrategy, strategy)
}

// runStrategy returns the VM's run strategy, spec.running mapped to Always or
// Halted.
func runStrategy(vm *virtv1.VirtualMachine) (virtv1.VirtualMachineRunStrategy, error) {
	s, err := vm.RunStrategy()
	if err != nil {
		return s, fmt.Errorf("%w: spec.running and spec.runStrategy: %w", ErrRunStrategy, err)
	}
	return s, nil
}

// orphans reports whether vm is deleted with propagationPolicy Orphan.
func orphans(vm *virtv1.VirtualMachine) bool {
	for _, f := range vm.Finalizers {
		if f == metav1.FinalizerOrphanDependents {
			return true
		}
	}
	return false
}

// hasStartRequest reports whether the first pending state change is Start.
// Requests are processed one at a time, in order.
func hasStartRequest(vm *virtv1.VirtualMachine) bool {
	r := vm.Status.StateChangeRequests
	return len(r) > 0 && r[0].Action == virtv1.StartRequest
}

// hasStartPausedRequest reports whether the first pending state change is a
// Start that asks for a paused guest.
func hasStartPausedRequest(vm *virtv1.VirtualMachine) bool {
	r := vm.Status.StateChangeRequests
	return hasStartRequest(vm) && r[0].Data[virtv1.StartRequestDataPausedKey] == virtv1.StartRequestDataPausedTrue
}

// hasStopRequestFor reports whether the first pending state change is a Stop
// of this very VMI.
func hasStopRequestFor(vm *virtv1.VirtualMachine, vmi *virtv1.VirtualMachineInstance) bool {
	r := vm.Status.StateChangeRequests
	return len(r) > 0 && r[0].Action == virtv1.StopRequest && r[0].UID != nil && *r[0].UID == vmi.UID
}

// pendingRequests drops the leading state change requests that vmi shows
// are done: a Stop whose VMI is gone or
// replaced, a Start whose VMI exists. The rest stay in order.
func pendingRequests(reqs []virtv1.VirtualMachineStateChangeRequest, vmi *virtv1.VirtualMachineInstance) []virtv1.VirtualMachineStateChangeRequest {
	for len(reqs) > 0 {
		r := reqs[0]
		done := false
		switch r.Action {
		case virtv1.StopRequest:
			done = vmi == nil || r.UID == nil || *r.UID != vmi.UID
		case virtv1.StartRequest:
			// KubeVirt clears a start once a VMI exists; one that is
			// going away does not count, so a start queued behind a
			// stop is not lost.
			done = vmi != nil && vmi.DeletionTimestamp == nil
		default:
			done = true // unknown actions cannot be acted upon
		}
		if !done {
			break
		}
		reqs = reqs[1:]
	}
	if len(reqs) == 0 {
		return nil
	}
	return reqs
}
