package vm

import (
	k8sv1 "k8s.io/api/core/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/controllers/conditions"
)

// hasFailure reports whether vm's Failure condition already says err: its
// Warning event was recorded when it was first written, and a terminal
// failure is seen again at every reconcile until the spec changes.
func hasFailure(vm *virtv1.VirtualMachine, err *SyncError) bool {
	c := conditions.VM().Find(vm.Status.Conditions, virtv1.VirtualMachineFailure)
	return c != nil && c.Status == k8sv1.ConditionTrue && c.Reason == err.Reason && c.Message == err.Err.Error()
}
