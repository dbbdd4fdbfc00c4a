package vm

import (
	k8sv1 "k8s.io/api/core/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/controllers/conditions"
	vmictl "github.com/virtkit/virtkit/controllers/vmi"
)

// Reasons of the VMI's Synchronized=False condition that printableStatus
// reports, as the VMI controller sets them from the launcher pod.
const (
	ReasonErrImagePull     = "ErrImagePull"
	ReasonImagePullBackOff = "ImagePullBackOff"
)

// PrintableStatus computes status.printableStatus as KubeVirt does: the first
// of these that holds wins, in this order: Terminating, Stopping, Migrating,
// Paused, Running, DataVolumeError, ErrorUnschedulable, Provisioning,
// WaitingForVolumeBinding, ErrImagePull, ImagePullBackOff,
// Starting, CrashLoopBackOff, Stopped; otherwise Unknown. vm carries the
// status computed so far (startFailure); vmi is the VMI as it is
// after this reconcile (a just-created one has an empty phase, a just-deleted
// one a deletion timestamp), nil when there is none; dvs is what the VM's
// DataVolumes and claims are up to, which adds DataVolumeError after
// Running, Provisioning after ErrorUnschedulable, and WaitingForVolumeBinding
// (a claim not bound, for a VM set to start) after it. ErrorPvcNotFound is
// not computed yet.
func PrintableStatus(vm *virtv1.VirtualMachine, vmi *virtv1.VirtualMachineInstance, dvs DataVolumes) virtv1.VirtualMachinePrintableStatus {
	switch {
	case vm.DeletionTimestamp != nil:
		return virtv1.VirtualMachineStatusTerminating
	case vmi != nil && !vmi.IsFinal() && (vmi.IsMarkedForDeletion() || hasStopRequestFor(vm, vmi)):
		return virtv1.VirtualMachineStatusStopping
	case vmi != nil && vmictl.MigrationStarted(vmi):
		return virtv1.VirtualMachineStatusMigrating
	case vmi != nil && vmi.IsRunning() && paused(vmi):
		return virtv1.VirtualMachineStatusPaused
	case vmi != nil && vmi.IsRunning():
		return virtv1.VirtualMachineStatusRunning
	case dvs.Err != nil:
		return virtv1.VirtualMachineStatusDataVolumeError
	case vmi != nil && unschedulable(vmi):
		return virtv1.VirtualMachineStatusUnschedulable
	case dvs.Provisioning:
		return virtv1.VirtualMachineStatusProvisioning
	case dvs.Unbound != "" && setToStart(vm, vmi):
		return virtv1.VirtualMachineStatusWaitingForVolumeBinding
	case syncFailure(vmi) == ReasonErrImagePull:
		return virtv1.VirtualMachineStatusErrImagePull
	case syncFailure(vmi) == ReasonImagePullBackOff:
		return virtv1.VirtualMachineStatusImagePullBackOff
	case vmi != nil && (vmi.IsUnprocessed() || vmi.IsScheduling() || vmi.IsScheduled()):
		return virtv1.VirtualMachineStatusStarting
	case crashLooping(vm, vmi):
		return virtv1.VirtualMachineStatusCrashLoopBackOff
	case vmi != nil && vmi.IsFinal(), vmi == nil:
		return virtv1.VirtualMachineStatusStopped
	}
	return virtv1.VirtualMachineStatusUnknown
}

// setToStart says whether vm is meant to run now, as KubeVirt's
// isSetToStart.
func setToStart(vm *virtv1.VirtualMachine, vmi *virtv1.VirtualMachineInstance) bool {
	s, err := vm.RunStrategy()
	if err != nil {
		return false
	}
	switch s {
	case virtv1.RunStrategyAlways:
		return true
	case virtv1.RunStrategyManual:
		if vmi != nil {
			return !hasStopRequestFor(vm, vmi)
		}
		r := vm.Status.StateChangeRequests
		return len(r) > 0 && r[0].Action == virtv1.StartRequest
	case virtv1.RunStrategyRerunOnFailure:
		return vmi == nil || vmi.Status.Phase != virtv1.Succeeded
	case virtv1.RunStrategyOnce:
		return vmi == nil
	}
	return false
}

// crashLooping: no live VMI, and the strategy waits out start failures.
func crashLooping(vm *virtv1.VirtualMachine, vmi *virtv1.VirtualMachineInstance) bool {
	if vmi != nil && !vmi.IsFinal() {
		return false
	}
	s, err := vm.RunStrategy()
	return err == nil && restarts(s) && vm.Status.StartFailure != nil && vm.Status.StartFailure.ConsecutiveFailCount > 0
}

func paused(vmi *virtv1.VirtualMachineInstance) bool {
	c := vmiCondition(vmi, virtv1.VirtualMachineInstancePaused)
	return c != nil && c.Status == k8sv1.ConditionTrue
}

func unschedulable(vmi *virtv1.VirtualMachineInstance) bool {
	c := vmiCondition(vmi, virtv1.VirtualMachineInstanceConditionType(k8sv1.PodScheduled))
	return c != nil && c.Status == k8sv1.ConditionFalse && c.Reason == k8sv1.PodReasonUnschedulable
}

// syncFailure returns the reason of the VMI's Synchronized=False condition.
func syncFailure(vmi *virtv1.VirtualMachineInstance) string {
	c := vmiCondition(vmi, virtv1.VirtualMachineInstanceSynchronized)
	if c == nil || c.Status != k8sv1.ConditionFalse {
		return ""
	}
	return c.Reason
}

func vmiCondition(vmi *virtv1.VirtualMachineInstance, t virtv1.VirtualMachineInstanceConditionType) *virtv1.VirtualMachineInstanceCondition {
	if vmi == nil {
		return nil
	}
	return conditions.VMI().Find(vmi.Status.Conditions, t)
}
