// Package nodehealth is virt-controller's node controller, KubeVirt's: it
// notices a node whose virt-handler stopped beating and deals with the VMIs
// left there, so that their VMs can run again elsewhere.
//
// A node is unresponsive ([Assess]) when it is gone, or when its handler's
// heartbeat (the kubevirt.io/heartbeat annotation the handler writes every
// minute) is older than the heartbeat timeout (KubeVirt's 5 minutes). A node
// that never had a heartbeat has no handler to miss and is left alone. On an
// unresponsive node the controller ([Reconciler]):
//   - sets the label kubevirt.io/schedulable to false, so no new launcher is
//     placed there (the handler sets it true again when it beats), with a
//     NodeUnresponsive event on the node;
//   - moves to Failed, with reason NodeUnresponsive and a Ready condition
//     whose message names the node, each VMI on it whose launcher pod is no
//     longer alive, as KubeVirt does;
//   - when the node itself is down as well (gone, or not Ready for longer
//     than the not-ready grace period), moves every VMI on it to Failed the
//     same way and force-deletes their launcher pods, which the node's
//     kubelet can no longer end: a VM with runStrategy Always or
//     RerunOnFailure then starts again on another node.
//
// A node whose handler stopped but whose kubelet is Ready keeps the VMIs
// whose launchers still run: their guests may still be running, and a second
// copy elsewhere would share their disks. The decisions are pure ([Assess],
// [Plan]); the Reconciler applies them.
package nodehealth
