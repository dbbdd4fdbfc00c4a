package vm

import (
	"time"

	k8sv1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/controllers/conditions"
)

// Reasons and event reasons as KubeVirt names them.
const (
	ReasonSuccessfulCreate = "SuccessfulCreate"
	ReasonFailedCreate     = "FailedCreate"
	ReasonSuccessfulDelete = "SuccessfulDelete"
	ReasonFailedDelete     = "FailedDelete"
	// ReasonVMINotExists and ReasonVMIConditionMissing explain a false Ready
	// condition when there is no VMI, or the VMI has no Ready condition yet.
	ReasonVMINotExists        = "VMINotExists"
	ReasonVMIConditionMissing = "VMIConditionMissing"
)

// SyncError is a failure of this reconcile that the Failure condition reports.
type SyncError struct {
	// Reason is the condition's reason, e.g. FailedCreate.
	Reason string
	// Err is the cause; its text is the condition's message.
	Err error
	// Terminal: retrying cannot help until the VM's spec changes.
	Terminal bool
}

func (e *SyncError) Error() string { return e.Reason + ": " + e.Err.Error() }
func (e *SyncError) Unwrap() error { return e.Err }

// NextStatus returns the status vm should have, given the VMI as it is after
// this reconcile's action (nil when there is none), the failure of this
// reconcile (nil when none), the VM's DataVolumes and the time now. It does
// not change vm. Fields it does not own (volume, snapshot, instancetype
// statuses...) are kept.
func NextStatus(vm *virtv1.VirtualMachine, vmi *virtv1.VirtualMachineInstance, syncErr *SyncError, dvs DataVolumes,
	now time.Time, b Backoff) virtv1.VirtualMachineStatus {
	next := vm.DeepCopy()
	st := &next.Status
	st.StateChangeRequests = pendingRequests(st.StateChangeRequests, vmi)
	strategy, err := vm.RunStrategy()
	if err == nil {
		st.RunStrategy = strategy
		st.StartFailure = nextStartFailure(st.StartFailure, strategy, vmi, now, b)
	}
	st.Created = vmi != nil
	st.Ready = vmi != nil && vmi.DeletionTimestamp == nil && !vmi.IsFinal() && vmiReady(vmi)
	st.ObservedGeneration = vm.Generation
	st.DesiredGeneration = vm.Generation

	ts := metav1.NewTime(now.Truncate(time.Second))
	// Every condition comes with its times; the mirrored ones keep the
	// VMI's as they are, so nothing is stamped here.
	var verbatim metav1.Time
	conditions.VM().Set(&st.Conditions, readyCondition(vmi, ts), verbatim)
	if c := vmiCondition(vmi, virtv1.VirtualMachineInstancePaused); c != nil && c.Status == k8sv1.ConditionTrue {
		conditions.VM().Set(&st.Conditions, virtv1.VirtualMachineCondition{Type: virtv1.VirtualMachinePaused, Status: c.Status,
			Reason: c.Reason, Message: c.Message, LastProbeTime: c.LastProbeTime, LastTransitionTime: c.LastTransitionTime}, verbatim)
	} else {
		conditions.VM().Remove(&st.Conditions, virtv1.VirtualMachinePaused)
	}
	if syncErr != nil {
		conditions.VM().Set(&st.Conditions, virtv1.VirtualMachineCondition{Type: virtv1.VirtualMachineFailure, Status: k8sv1.ConditionTrue,
			Reason: syncErr.Reason, Message: syncErr.Err.Error(), LastTransitionTime: ts}, verbatim)
	} else {
		conditions.VM().Remove(&st.Conditions, virtv1.VirtualMachineFailure)
	}
	volumeMigrationStatus(st, vm, vmi, ts)
	syncRestartRequired(st, vm, vmi, ts)
	st.PrintableStatus = PrintableStatus(next, vmi, dvs)
	return *st
}

func vmiReady(vmi *virtv1.VirtualMachineInstance) bool {
	c := vmiCondition(vmi, virtv1.VirtualMachineInstanceReady)
	return c != nil && c.Status == k8sv1.ConditionTrue
}

// readyCondition mirrors the VMI's Ready condition, as KubeVirt does.
func readyCondition(vmi *virtv1.VirtualMachineInstance, now metav1.Time) virtv1.VirtualMachineCondition {
	switch c := vmiCondition(vmi, virtv1.VirtualMachineInstanceReady); {
	case vmi == nil:
		return virtv1.VirtualMachineCondition{Type: virtv1.VirtualMachineReady, Status: k8sv1.ConditionFalse,
			Reason: ReasonVMINotExists, Message: "VMI does not exist", LastProbeTime: now, LastTransitionTime: now}
	case c == nil:
		return virtv1.VirtualMachineCondition{Type: virtv1.VirtualMachineReady, Status: k8sv1.ConditionFalse,
			Reason: ReasonVMIConditionMissing, Message: "VMI is missing the Ready condition", LastProbeTime: now, LastTransitionTime: now}
	default:
		return virtv1.VirtualMachineCondition{Type: virtv1.VirtualMachineReady, Status: c.Status,
			Reason: c.Reason, Message: c.Message, LastProbeTime: c.LastProbeTime, LastTransitionTime: c.LastTransitionTime}
	}
}
