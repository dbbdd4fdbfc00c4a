// Package vmi is the VirtualMachineInstance controller: it renders and
// creates the virt-launcher pod of each kubevirt.io/v1 VirtualMachineInstance,
// follows the pod through scheduling, and moves the VMI through the phases
// KubeVirt's virt-controller owns, with KubeVirt's semantics.
//
// It owns:
//   - launcher pod rendering (RenderPod): name, labels, owner reference, the
//     compute container and its command, the computed memory overhead
//     (MemoryOverhead, docs/performance.md), scheduling constraints copied
//     from the VMI, and the pod volumes backing the VMI's volumes;
//   - the phases "" -> Pending -> Scheduling -> Scheduled, and Failed when the
//     pod fails or disappears before the node's handler took the VMI over;
//   - status.nodeName (a CRD selectable field: the handler watches its
//     node's VMIs with the field selector status.nodeName=NODE, so, unlike
//     KubeVirt, no kubevirt.io/nodeName label is patched on), status.activePods, the
//     PodScheduled condition (copied from the pod, reason and message
//     included) and the Synchronized condition on pod creation failure;
//   - the kubevirt.io/foregroundDeleteVirtualMachine finalizer: a VMI goes
//     only after its launcher pod is gone. VMIs are born with it (the
//     mutating webhook and the VM controller add it); it is added here only
//     to a VMI created without either;
//   - deleting the pod of a deleted, Succeeded or Failed VMI;
//   - Warning events on the VMI for the failures its status reports
//     (StatusWarnings: image pulls, scheduling, a failed launcher).
//
// It must not touch: the phases Running and Succeeded and the Ready condition
// of a running guest (virt-handler owns them), the VMI's spec, or any virt/
// package but virt/spec and virt/launcher/contract. It does not import
// virt/launcher (which pulls in virt/domain, virt/network and virt/storage);
// the launcher contract values it needs (binary, flags, ready file, exit
// codes) come from virt/launcher/contract, which imports nothing.
//
// The pure parts (RenderPod, MemoryOverhead, PlanFor, NextStatus) are
// exported so their tables can be read and reused; Reconciler wires them to
// the API.
package vmi
