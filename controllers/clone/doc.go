// Package clone holds virt-controller's VM clone controller
// (clone.kubevirt.io/v1beta1 VirtualMachineClone), which does what the
// plans of virt/clone say, through the VM snapshot and restore
// controllers of controllers/snapshot:
//
//   - a clone of a VM takes a temporary VirtualMachineSnapshot of it
//     (phase SnapshotInProgress); a clone of a VM snapshot uses that one;
//   - once the snapshot is ready and holds every claim of its VM, the
//     clone makes a VirtualMachineRestore of it to the target VM, with
//     the JSON patches that give the copy its own MAC addresses, SMBIOS
//     serial and firmware UUID and drop the filtered labels and
//     annotations (RestoreInProgress);
//   - once the restore is complete and the target VM there
//     (CreatingTargetVM, then Succeeded), with its claims bound, the
//     temporary restore and snapshot go.
//
// Phases, conditions (Progressing, Ready) and event reasons are
// KubeVirt's, as is deleting a succeeded clone whose target VM is
// deleted. Unlike KubeVirt's, a clone fails when its snapshot or restore
// fails, and never writes over a VM that existed before it.
package clone
