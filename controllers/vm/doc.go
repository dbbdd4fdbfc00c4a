// Package vm is the VirtualMachine controller: it keeps the one
// VirtualMachineInstance a kubevirt.io/v1 VirtualMachine owns in the state
// the VM's run strategy asks for, and reports that state in the VM's status,
// with KubeVirt's semantics.
//
// It owns:
//   - the run-strategy decision (Always, RerunOnFailure, Manual, Halted, Once
//     and the deprecated spec.running), including start/stop/restart requests
//     that the subresource API writes to status.stateChangeRequests;
//   - creating the VMI from the VM's template (virt/spec.NewVMIFromVM, then
//     DefaultVMI and ValidateVMI) and deleting it gracefully;
//   - the VM status: created, ready, printableStatus, conditions (Ready,
//     Paused, Failure), runStrategy, observedGeneration and the start-failure
//     crash-loop backoff;
//   - the kubevirt.io/virtualMachineControllerFinalize finalizer on the VM,
//     which deletes the VMI before the VM goes (owner references let a real
//     cluster's garbage collector do the same).
//
// It must not touch: the VMI's status (the VMI controller and the handler own
// it), launcher pods, or any virt/ package other than virt/spec.
//
// The pure parts (Plan, PrintableStatus, NextStatus) are exported so their
// tables can be read and reused; Reconciler wires them to the API.
package vm
