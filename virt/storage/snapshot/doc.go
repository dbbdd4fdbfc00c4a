// Package snapshot holds the guest freeze/thaw, volume snapshot and restore
// primitives that VirtualMachineSnapshot and VirtualMachineRestore build on.
//
// Status: not implemented yet (after the first slice; see ARCHITECTURE.md).
package snapshot
