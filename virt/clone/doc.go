// Package clone is what a KubeVirt VM clone (clone.kubevirt.io/v1beta1
// VirtualMachineClone) means, as plain functions over API objects; the
// controller in controllers/clone does what they say, through the
// snapshot and restore machinery of virt/storage/snapshot.
//
// A clone of a VM is a VM snapshot of it, restored to a new VM: the
// restore's JSON patches give the new VM its own MAC addresses (those of
// spec.newMacAddresses, or none, so that each boot draws one), its own
// SMBIOS serial (spec.newSMBiosSerial, or none) and firmware UUID (derived
// from its name), and drop the labels and annotations the filters leave
// out. A clone of a VM snapshot skips the first step.
//
//   - [Validate] and [Default]: what the webhook refuses, each error naming
//     its field, and the target it fills in (clone-SOURCE-XXXXX).
//   - [Patches]: the JSON patches that make the copy a new machine.
//   - [Snapshot] and [Restore]: the temporary VirtualMachineSnapshot and
//     VirtualMachineRestore, with KubeVirt's names and the clone as their
//     owner.
//   - [Keep]: the label and annotation filters: KEY, PREFIX* and * keep
//     what they match, !KEY and !PREFIX* leave it out, and leaving out
//     wins.
//   - The phase, event reason and condition helpers: KubeVirt's, so that
//     clients written for KubeVirt read them.
//
// It builds without cgo on any GOOS and touches no API server. See
// docs/snapshots.md.
package clone
