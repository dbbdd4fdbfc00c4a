package vm

import (
	"time"

	k8sv1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"
)

// t0 is the fixed "now" of the unit tests.
var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// fixedBackoff has no jitter, so delays are exact.
var fixedBackoff = Backoff{Max: 300 * time.Second, Jitter: func(int) int { return 0 }}

type vmOpt func(*virtv1.VirtualMachine)

func newVM(opts ...vmOpt) *virtv1.VirtualMachine {
	vm := &virtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: "vm1", Namespace: "default", UID: "vm-uid", Generation: 1},
		Spec:       virtv1.VirtualMachineSpec{Template: &virtv1.VirtualMachineInstanceTemplateSpec{}},
	}
	for _, o := range opts {
		o(vm)
	}
	return vm
}

func strategy(s virtv1.VirtualMachineRunStrategy) vmOpt {
	return func(vm *virtv1.VirtualMachine) { vm.Spec.RunStrategy = &s }
}

func running(b bool) vmOpt { return func(vm *virtv1.VirtualMachine) { vm.Spec.Running = &b } }

func statusStrategy(s virtv1.VirtualMachineRunStrategy) vmOpt {
	return func(vm *virtv1.VirtualMachine) { vm.Status.RunStrategy = s }
}

func startReq() vmOpt {
	return func(vm *virtv1.VirtualMachine) {
		vm.Status.StateChangeRequests = append(vm.Status.StateChangeRequests,
			virtv1.VirtualMachineStateChangeRequest{Action: virtv1.StartRequest})
	}
}

func stopReq(uid types.UID) vmOpt {
	return func(vm *virtv1.VirtualMachine) {
		vm.Status.StateChangeRequests = append(vm.Status.StateChangeRequests,
			virtv1.VirtualMachineStateChangeRequest{Action: virtv1.StopRequest, UID: &uid})
	}
}

func deleting() vmOpt {
	return func(vm *virtv1.VirtualMachine) { ts := metav1.NewTime(t0); vm.DeletionTimestamp = &ts }
}

func failures(n int, retry time.Time) vmOpt {
	return func(vm *virtv1.VirtualMachine) {
		ts := metav1.NewTime(retry)
		vm.Status.StartFailure = &virtv1.VirtualMachineStartFailure{ConsecutiveFailCount: n, LastFailedVMIUID: "old", RetryAfterTimestamp: &ts}
	}
}

type vmiOpt func(*virtv1.VirtualMachineInstance)

func newVMI(phase virtv1.VirtualMachineInstancePhase, opts ...vmiOpt) *virtv1.VirtualMachineInstance {
	vmi := &virtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Name: "vm1", Namespace: "default", UID: "vmi-uid"},
		Status:     virtv1.VirtualMachineInstanceStatus{Phase: phase},
	}
	for _, o := range opts {
		o(vmi)
	}
	return vmi
}

func vmiDeleting() vmiOpt {
	return func(vmi *virtv1.VirtualMachineInstance) { ts := metav1.NewTime(t0); vmi.DeletionTimestamp = &ts }
}

func ranBefore() vmiOpt {
	return func(vmi *virtv1.VirtualMachineInstance) {
		vmi.Status.PhaseTransitionTimestamps = append(vmi.Status.PhaseTransitionTimestamps,
			virtv1.VirtualMachineInstancePhaseTransitionTimestamp{Phase: virtv1.Running, PhaseTransitionTimestamp: metav1.NewTime(t0)})
	}
}

func vmiCond(t virtv1.VirtualMachineInstanceConditionType, s k8sv1.ConditionStatus, reason string) vmiOpt {
	return func(vmi *virtv1.VirtualMachineInstance) {
		vmi.Status.Conditions = append(vmi.Status.Conditions, virtv1.VirtualMachineInstanceCondition{Type: t, Status: s, Reason: reason})
	}
}

func migratingNow() vmiOpt {
	return func(vmi *virtv1.VirtualMachineInstance) {
		ts := metav1.NewTime(t0)
		vmi.Status.MigrationState = &virtv1.VirtualMachineInstanceMigrationState{StartTimestamp: &ts}
	}
}

func typesUID(s string) types.UID { return types.UID(s) }
