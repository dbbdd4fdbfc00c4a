// Package replicaset is the VirtualMachineInstanceReplicaSet controller: it
// keeps spec.replicas VirtualMachineInstances of a replica set's template in
// being, with KubeVirt's semantics, and reports them in the replica set's
// status (replicas, readyReplicas, labelSelector, the ReplicaFailure and
// ReplicaPaused conditions), which the scale subresource serves to kubectl
// scale and a HorizontalPodAutoscaler.
//
// It owns:
//   - claiming VMIs: the replica set controls the VMIs its selector matches
//     and no other controller controls (adoption), and lets go of those it
//     controls that no longer match (release), as Kubernetes' controllers do;
//   - scaling: creating VMIs of the template (virt/spec.NewVMIFromReplicaSet,
//     then DefaultVMI and ValidateVMI) and deleting those beyond the count,
//     least advanced first (DeletionOrder), in batches that grow while they
//     succeed; deleting finished VMIs so that a replacement is made;
//   - spec.paused, which stops scaling and is reported as ReplicaPaused.
//
// It must not touch: a VMI's spec or status after creating it, launcher
// pods, or any virt/ package other than virt/spec. Deleting a replica set
// deletes its VMIs through their owner references (the garbage collector).
//
// The pure part (PlanFor, DeletionOrder, NextStatus) is exported so its
// tables can be read and reused; Reconciler wires it to the API.
//
// See docs/controllers/replicaset.md.
package replicaset
