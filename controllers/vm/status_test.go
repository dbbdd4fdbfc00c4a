package vm

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
)

func TestNextStatus(t *testing.T) {
	now := metav1.NewTime(t0)
	notExists := virtv1.VirtualMachineCondition{Type: virtv1.VirtualMachineReady, Status: k8sv1.ConditionFalse,
		Reason: ReasonVMINotExists, Message: "VMI does not exist", LastProbeTime: now, LastTransitionTime: now}
	missing := virtv1.VirtualMachineCondition{Type: virtv1.VirtualMachineReady, Status: k8sv1.ConditionFalse,
		Reason: ReasonVMIConditionMissing, Message: "VMI is missing the Ready condition", LastProbeTime: now, LastTransitionTime: now}
	retry := metav1.NewTime(t0.Add(10 * time.Second))
	tests := []struct {
		name    string
		vm      *virtv1.VirtualMachine
		vmi     *virtv1.VirtualMachineInstance
		syncErr *SyncError
		want    virtv1.VirtualMachineStatus
	}{
		{
			name: "halted, no VMI",
			vm:   newVM(strategy(virtv1.RunStrategyHalted)),
			want: virtv1.VirtualMachineStatus{PrintableStatus: virtv1.VirtualMachineStatusStopped, RunStrategy: virtv1.RunStrategyHalted,
				ObservedGeneration: 1, DesiredGeneration: 1, Conditions: []virtv1.VirtualMachineCondition{notExists}},
		},
		{
			name: "just created, start request cleared",
			vm:   newVM(strategy(virtv1.RunStrategyManual), startReq()),
			vmi:  newVMI(""),
			want: virtv1.VirtualMachineStatus{Created: true, PrintableStatus: virtv1.VirtualMachineStatusStarting, RunStrategy: virtv1.RunStrategyManual,
				ObservedGeneration: 1, DesiredGeneration: 1, Conditions: []virtv1.VirtualMachineCondition{missing}},
		},
		{
			name: "running and ready",
			vm:   newVM(running(true)),
			vmi:  newVMI(virtv1.Running, ranBefore(), vmiCond(virtv1.VirtualMachineInstanceReady, k8sv1.ConditionTrue, "")),
			want: virtv1.VirtualMachineStatus{Created: true, Ready: true, PrintableStatus: virtv1.VirtualMachineStatusRunning, RunStrategy: virtv1.RunStrategyAlways,
				ObservedGeneration: 1, DesiredGeneration: 1,
				Conditions: []virtv1.VirtualMachineCondition{{Type: virtv1.VirtualMachineReady, Status: k8sv1.ConditionTrue}}},
		},
		{
			name: "paused",
			vm:   newVM(strategy(virtv1.RunStrategyAlways)),
			vmi: newVMI(virtv1.Running, vmiCond(virtv1.VirtualMachineInstanceReady, k8sv1.ConditionFalse, "Paused"),
				vmiCond(virtv1.VirtualMachineInstancePaused, k8sv1.ConditionTrue, "PausedByUser")),
			want: virtv1.VirtualMachineStatus{Created: true, PrintableStatus: virtv1.VirtualMachineStatusPaused, RunStrategy: virtv1.RunStrategyAlways,
				ObservedGeneration: 1, DesiredGeneration: 1, Conditions: []virtv1.VirtualMachineCondition{
					{Type: virtv1.VirtualMachineReady, Status: k8sv1.ConditionFalse, Reason: "Paused"},
					{Type: virtv1.VirtualMachinePaused, Status: k8sv1.ConditionTrue, Reason: "PausedByUser"}}},
		},
		{
			name: "failed early under Always: counted, crash loop",
			vm:   newVM(strategy(virtv1.RunStrategyAlways)),
			vmi:  newVMI(virtv1.Failed, vmiCond(virtv1.VirtualMachineInstanceReady, k8sv1.ConditionFalse, "")),
			want: virtv1.VirtualMachineStatus{Created: true, PrintableStatus: virtv1.VirtualMachineStatusCrashLoopBackOff, RunStrategy: virtv1.RunStrategyAlways,
				ObservedGeneration: 1, DesiredGeneration: 1,
				StartFailure: &virtv1.VirtualMachineStartFailure{ConsecutiveFailCount: 1, LastFailedVMIUID: "vmi-uid", RetryAfterTimestamp: &retry},
				Conditions:   []virtv1.VirtualMachineCondition{{Type: virtv1.VirtualMachineReady, Status: k8sv1.ConditionFalse}}},
		},
		{
			name:    "create failed",
			vm:      newVM(strategy(virtv1.RunStrategyAlways)),
			syncErr: &SyncError{Reason: ReasonFailedCreate, Err: errors.New("quota exceeded")},
			want: virtv1.VirtualMachineStatus{PrintableStatus: virtv1.VirtualMachineStatusStopped, RunStrategy: virtv1.RunStrategyAlways,
				ObservedGeneration: 1, DesiredGeneration: 1, Conditions: []virtv1.VirtualMachineCondition{notExists,
					{Type: virtv1.VirtualMachineFailure, Status: k8sv1.ConditionTrue, Reason: ReasonFailedCreate, Message: "quota exceeded", LastTransitionTime: now}}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := NextStatus(tc.vm, tc.vmi, tc.syncErr, DataVolumes{Ready: true}, t0, fixedBackoff)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("NextStatus (-want +got):\n%s", d)
			}
		})
	}
}

// A VM whose status is already what NextStatus computes must compare equal,
// later, so that the reconciler skips the write.
func TestNextStatusStable(t *testing.T) {
	vm := newVM(strategy(virtv1.RunStrategyAlways))
	vmi := newVMI(virtv1.Running, ranBefore(), vmiCond(virtv1.VirtualMachineInstanceReady, k8sv1.ConditionTrue, ""))
	vm.Status = NextStatus(vm, vmi, nil, DataVolumes{Ready: true}, t0, fixedBackoff)
	again := NextStatus(vm, vmi, nil, DataVolumes{Ready: true}, t0.Add(time.Hour), fixedBackoff)
	if !equality.Semantic.DeepEqual(vm.Status, again) {
		t.Errorf("status changed with nothing new:\n%s", cmp.Diff(vm.Status, again))
	}
}

func TestBackoffDelay(t *testing.T) {
	b := fixedBackoff
	for count, want := range map[int]time.Duration{0: 10 * time.Second, 1: 10 * time.Second, 2: 40 * time.Second,
		3: 90 * time.Second, 5: 250 * time.Second, 6: 300 * time.Second} {
		if got := b.Delay(count); got != want {
			t.Errorf("Delay(%d) = %v, want %v", count, got, want)
		}
	}
	b.Jitter = func(n int) int { return n - 1 }
	if got, want := b.Delay(2), 60*time.Second; got != want {
		t.Errorf("Delay(2) with most jitter = %v, want %v", got, want)
	}
}

func TestNextStartFailure(t *testing.T) {
	cur := &virtv1.VirtualMachineStartFailure{ConsecutiveFailCount: 2, LastFailedVMIUID: "vmi-uid"}
	tests := []struct {
		name     string
		cur      *virtv1.VirtualMachineStartFailure
		strategy virtv1.VirtualMachineRunStrategy
		vmi      *virtv1.VirtualMachineInstance
		want     int // ConsecutiveFailCount; 0 for none
	}{
		{"first early failure", nil, virtv1.RunStrategyAlways, newVMI(virtv1.Failed), 1},
		{"same VMI counted once", cur, virtv1.RunStrategyAlways, newVMI(virtv1.Failed), 2},
		{"next VMI counted", cur, virtv1.RunStrategyRerunOnFailure, newVMI(virtv1.Failed, func(v *virtv1.VirtualMachineInstance) { v.UID = "next" }), 3},
		{"ran, then failed: cleared", cur, virtv1.RunStrategyAlways, newVMI(virtv1.Failed, ranBefore()), 0},
		{"running: cleared", cur, virtv1.RunStrategyAlways, newVMI(virtv1.Running), 0},
		{"Manual: cleared", cur, virtv1.RunStrategyManual, newVMI(virtv1.Failed), 0},
		{"no VMI: kept", cur, virtv1.RunStrategyAlways, nil, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := 0
			if f := nextStartFailure(tc.cur, tc.strategy, tc.vmi, t0, fixedBackoff); f != nil {
				got = f.ConsecutiveFailCount
			}
			if got != tc.want {
				t.Errorf("ConsecutiveFailCount = %d, want %d", got, tc.want)
			}
		})
	}
}
