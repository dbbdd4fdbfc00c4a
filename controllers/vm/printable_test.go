package vm

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	k8sv1 "k8s.io/api/core/v1"
	virtv1 "kubevirt.io/api/core/v1"
)

func TestPrintableStatus(t *testing.T) {
	always := strategy(virtv1.RunStrategyAlways)
	manual := strategy(virtv1.RunStrategyManual)
	tests := []struct {
		name string
		vm   *virtv1.VirtualMachine
		vmi  *virtv1.VirtualMachineInstance
		want virtv1.VirtualMachinePrintableStatus
	}{
		{"no VMI", newVM(manual), nil, virtv1.VirtualMachineStatusStopped},
		{"just created", newVM(always), newVMI(""), virtv1.VirtualMachineStatusStarting},
		{"pending", newVM(always), newVMI(virtv1.Pending), virtv1.VirtualMachineStatusStarting},
		{"scheduling", newVM(always), newVMI(virtv1.Scheduling), virtv1.VirtualMachineStatusStarting},
		{"scheduled", newVM(always), newVMI(virtv1.Scheduled), virtv1.VirtualMachineStatusStarting},
		{"running", newVM(always), newVMI(virtv1.Running), virtv1.VirtualMachineStatusRunning},
		{"paused", newVM(always), newVMI(virtv1.Running, vmiCond(virtv1.VirtualMachineInstancePaused, k8sv1.ConditionTrue, "PausedByUser")), virtv1.VirtualMachineStatusPaused},
		{"migrating", newVM(always), newVMI(virtv1.Running, migratingNow()), virtv1.VirtualMachineStatusMigrating},
		{"deleting", newVM(always), newVMI(virtv1.Running, vmiDeleting()), virtv1.VirtualMachineStatusStopping},
		{"stop requested", newVM(manual, stopReq("vmi-uid")), newVMI(virtv1.Running), virtv1.VirtualMachineStatusStopping},
		{"deleting but final", newVM(always), newVMI(virtv1.Failed, vmiDeleting()), virtv1.VirtualMachineStatusStopped},
		{"VM deleted", newVM(always, deleting()), newVMI(virtv1.Running), virtv1.VirtualMachineStatusTerminating},
		{"succeeded", newVM(manual), newVMI(virtv1.Succeeded), virtv1.VirtualMachineStatusStopped},
		{"failed, manual", newVM(manual), newVMI(virtv1.Failed), virtv1.VirtualMachineStatusStopped},
		{"failed, Always, start failures", newVM(always, failures(2, t0)), newVMI(virtv1.Failed), virtv1.VirtualMachineStatusCrashLoopBackOff},
		{"no VMI, Always, start failures", newVM(always, failures(1, t0)), nil, virtv1.VirtualMachineStatusCrashLoopBackOff},
		{"no VMI, Manual, stale start failures", newVM(manual, failures(1, t0)), nil, virtv1.VirtualMachineStatusStopped},
		{"unschedulable", newVM(always), newVMI(virtv1.Scheduling,
			vmiCond(virtv1.VirtualMachineInstanceConditionType(k8sv1.PodScheduled), k8sv1.ConditionFalse, k8sv1.PodReasonUnschedulable)),
			virtv1.VirtualMachineStatusUnschedulable},
		{"image pull", newVM(always), newVMI(virtv1.Scheduled,
			vmiCond(virtv1.VirtualMachineInstanceSynchronized, k8sv1.ConditionFalse, ReasonErrImagePull)), virtv1.VirtualMachineStatusErrImagePull},
		{"image pull backoff", newVM(always), newVMI(virtv1.Scheduled,
			vmiCond(virtv1.VirtualMachineInstanceSynchronized, k8sv1.ConditionFalse, ReasonImagePullBackOff)), virtv1.VirtualMachineStatusImagePullBackOff},
		{"unknown phase", newVM(always), newVMI(virtv1.Unknown), virtv1.VirtualMachineStatusUnknown},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, PrintableStatus(tc.vm, tc.vmi, DataVolumes{Ready: true})); d != "" {
				t.Errorf("PrintableStatus (-want +got):\n%s", d)
			}
		})
	}
}

// TestPrintableStatusDataVolumes: the statuses a VM's DataVolumes add, in
// KubeVirt's order.
func TestPrintableStatusDataVolumes(t *testing.T) {
	always := strategy(virtv1.RunStrategyAlways)
	manual := strategy(virtv1.RunStrategyManual)
	importing := DataVolumes{Provisioning: true}
	failed := DataVolumes{Err: errors.New("DataVolume disk is in Failed phase")}
	tests := []struct {
		name string
		vm   *virtv1.VirtualMachine
		vmi  *virtv1.VirtualMachineInstance
		want virtv1.VirtualMachinePrintableStatus
		dvs  DataVolumes
	}{
		{"importing, no VMI", newVM(always), nil, virtv1.VirtualMachineStatusProvisioning, importing},
		{"importing, stopped", newVM(manual), nil, virtv1.VirtualMachineStatusProvisioning, importing},
		{"import failed", newVM(always), nil, virtv1.VirtualMachineStatusDataVolumeError, failed},
		{"import failed beats provisioning", newVM(always), nil, virtv1.VirtualMachineStatusDataVolumeError, DataVolumes{Provisioning: true, Err: failed.Err}},
		{"running wins over an import", newVM(always), newVMI(virtv1.Running), virtv1.VirtualMachineStatusRunning, failed},
		{"unschedulable beats provisioning", newVM(always), newVMI(virtv1.Scheduling,
			vmiCond(virtv1.VirtualMachineInstanceConditionType(k8sv1.PodScheduled), k8sv1.ConditionFalse, k8sv1.PodReasonUnschedulable)),
			virtv1.VirtualMachineStatusUnschedulable, importing},
		{"claim not bound, starting", newVM(always), newVMI(virtv1.Scheduling), virtv1.VirtualMachineStatusWaitingForVolumeBinding, DataVolumes{Unbound: "disk"}},
		{"claim not bound, no VMI yet", newVM(always), nil, virtv1.VirtualMachineStatusWaitingForVolumeBinding, DataVolumes{Unbound: "disk"}},
		{"claim not bound, stopped", newVM(manual), nil, virtv1.VirtualMachineStatusStopped, DataVolumes{Unbound: "disk"}},
		{"provisioning beats binding", newVM(always), nil, virtv1.VirtualMachineStatusProvisioning, DataVolumes{Provisioning: true, Unbound: "disk"}},
		{"running wins over binding", newVM(always), newVMI(virtv1.Running), virtv1.VirtualMachineStatusRunning, DataVolumes{Unbound: "disk"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, PrintableStatus(tc.vm, tc.vmi, tc.dvs)); d != "" {
				t.Errorf("PrintableStatus (-want +got):\n%s", d)
			}
		})
	}
}
