package vm

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	virtv1 "kubevirt.io/api/core/v1"
)

func TestPlanFor(t *testing.T) {
	const (
		always = virtv1.RunStrategyAlways
		rerun  = virtv1.RunStrategyRerunOnFailure
		manual = virtv1.RunStrategyManual
		halted = virtv1.RunStrategyHalted
		once   = virtv1.RunStrategyOnce
	)
	later := t0.Add(30 * time.Second)
	tests := []struct {
		name string
		vm   *virtv1.VirtualMachine
		vmi  *virtv1.VirtualMachineInstance
		want Plan
	}{
		{"Always/no VMI: create", newVM(strategy(always)), nil, Plan{Create: true}},
		{"running=true/no VMI: create", newVM(running(true)), nil, Plan{Create: true}},
		{"running=false/VMI: delete", newVM(running(false)), newVMI(virtv1.Running), Plan{Delete: true}},
		{"Always/running: nothing", newVM(strategy(always)), newVMI(virtv1.Running), Plan{}},
		{"Always/succeeded: delete to recreate", newVM(strategy(always)), newVMI(virtv1.Succeeded), Plan{Delete: true}},
		{"Always/failed: delete to recreate", newVM(strategy(always)), newVMI(virtv1.Failed), Plan{Delete: true}},
		{"Always/failed being deleted: wait", newVM(strategy(always)), newVMI(virtv1.Failed, vmiDeleting()), Plan{}},
		{"Always/restart (stop request): delete", newVM(strategy(always), stopReq("vmi-uid"), startReq()), newVMI(virtv1.Running), Plan{Delete: true}},
		{"Always/stop request of another VMI: nothing", newVM(strategy(always), stopReq("other")), newVMI(virtv1.Running), Plan{}},
		{"Always/backoff pending: wait", newVM(strategy(always), failures(1, later)), nil, Plan{RequeueAfter: 30 * time.Second}},
		{"Always/backoff over: create", newVM(strategy(always), failures(1, t0.Add(-time.Second))), nil, Plan{Create: true}},
		{"Rerun/first start: create", newVM(strategy(rerun)), nil, Plan{Create: true}},
		{"Rerun/after success, no request: nothing", newVM(strategy(rerun), statusStrategy(rerun)), nil, Plan{}},
		{"Rerun/after failure, start request: create", newVM(strategy(rerun), statusStrategy(rerun), startReq()), nil, Plan{Create: true}},
		{"Rerun/start request in backoff: wait", newVM(strategy(rerun), statusStrategy(rerun), startReq(), failures(2, later)), nil, Plan{RequeueAfter: 30 * time.Second}},
		{"Rerun/failed: delete and request start", newVM(strategy(rerun), statusStrategy(rerun)), newVMI(virtv1.Failed), Plan{Delete: true, AddStartRequest: true}},
		{"Rerun/succeeded: delete, no restart", newVM(strategy(rerun), statusStrategy(rerun)), newVMI(virtv1.Succeeded), Plan{Delete: true}},
		{"Rerun/stop request: delete", newVM(strategy(rerun), stopReq("vmi-uid")), newVMI(virtv1.Running), Plan{Delete: true}},
		{"Rerun/running: nothing", newVM(strategy(rerun)), newVMI(virtv1.Running), Plan{}},
		{"Manual/no VMI: nothing", newVM(strategy(manual)), nil, Plan{}},
		{"Manual/start request: create", newVM(strategy(manual), startReq()), nil, Plan{Create: true}},
		{"Manual/start request behind a stop: nothing", newVM(strategy(manual), stopReq("gone"), startReq()), nil, Plan{}},
		{"Manual/failed VMI: kept", newVM(strategy(manual)), newVMI(virtv1.Failed), Plan{}},
		{"Manual/stop request: delete", newVM(strategy(manual), stopReq("vmi-uid")), newVMI(virtv1.Running), Plan{Delete: true}},
		{"Manual/stop request while deleting: wait", newVM(strategy(manual), stopReq("vmi-uid")), newVMI(virtv1.Running, vmiDeleting()), Plan{}},
		{"Halted/no VMI: nothing", newVM(strategy(halted)), nil, Plan{}},
		{"Halted/VMI: delete", newVM(strategy(halted)), newVMI(virtv1.Running), Plan{Delete: true}},
		{"Halted/start request: switch to Always", newVM(strategy(halted), startReq()), nil, Plan{SetAlways: true}},
		{"Once/no VMI: create", newVM(strategy(once)), nil, Plan{Create: true}},
		{"Once/failed: kept, never recreated", newVM(strategy(once)), newVMI(virtv1.Failed), Plan{}},
		{"Once/succeeded: kept", newVM(strategy(once)), newVMI(virtv1.Succeeded), Plan{}},
		{"VM deleted: delete VMI", newVM(strategy(always), deleting()), newVMI(virtv1.Running), Plan{Delete: true}},
		{"VM deleted/VMI already deleting: wait", newVM(strategy(always), deleting()), newVMI(virtv1.Running, vmiDeleting()), Plan{}},
		{"VM deleted with orphan: keep VMI", newVM(strategy(always), deleting(), func(vm *virtv1.VirtualMachine) {
			vm.Finalizers = []string{"orphan"}
		}), newVMI(virtv1.Running), Plan{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := PlanFor(tc.vm, tc.vmi, t0)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("PlanFor (-want +got):\n%s", d)
			}
		})
	}
}

func TestPlanForInvalidStrategy(t *testing.T) {
	for name, vm := range map[string]*virtv1.VirtualMachine{
		"running and runStrategy": newVM(running(true), strategy(virtv1.RunStrategyAlways)),
		"unknown strategy":        newVM(strategy("Sometimes")),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := PlanFor(vm, nil, t0)
			if !errors.Is(err, ErrRunStrategy) {
				t.Fatalf("err = %v, want ErrRunStrategy", err)
			}
		})
	}
}

func TestPendingRequests(t *testing.T) {
	stop := func(uid string) virtv1.VirtualMachineStateChangeRequest {
		u := typesUID(uid)
		return virtv1.VirtualMachineStateChangeRequest{Action: virtv1.StopRequest, UID: &u}
	}
	start := virtv1.VirtualMachineStateChangeRequest{Action: virtv1.StartRequest}
	reqs := func(r ...virtv1.VirtualMachineStateChangeRequest) []virtv1.VirtualMachineStateChangeRequest { return r }
	tests := []struct {
		name string
		in   []virtv1.VirtualMachineStateChangeRequest
		vmi  *virtv1.VirtualMachineInstance
		want []virtv1.VirtualMachineStateChangeRequest
	}{
		{"stop of running VMI stays", reqs(stop("vmi-uid")), newVMI(virtv1.Running), reqs(stop("vmi-uid"))},
		{"stop of deleting VMI stays", reqs(stop("vmi-uid")), newVMI(virtv1.Running, vmiDeleting()), reqs(stop("vmi-uid"))},
		{"stop done when VMI gone", reqs(stop("vmi-uid")), nil, nil},
		{"restart: stop done, start stays", reqs(stop("vmi-uid"), start), nil, reqs(start)},
		{"restart: both done on new VMI", reqs(stop("old"), start), newVMI(virtv1.Pending), nil},
		{"start done when VMI exists", reqs(start), newVMI(""), nil},
		{"start stays while VMI is going", reqs(start), newVMI(virtv1.Running, vmiDeleting()), reqs(start)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, pendingRequests(tc.in, tc.vmi)); d != "" {
				t.Errorf("pendingRequests (-want +got):\n%s", d)
			}
		})
	}
}
