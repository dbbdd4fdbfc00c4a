// Package pool is the VirtualMachinePool controller (pool.kubevirt.io): it
// keeps spec.replicas VirtualMachines of a pool's template, each named
// NAME-INDEX with per-index volume names (virt/spec.NewVMFromPool), brings
// them to the template when it changes, and reports them in the pool's
// status (replicas, readyReplicas, labelSelector, the ReplicaFailure and
// ReplicaPaused conditions), which the scale subresource serves.
//
// It owns, with KubeVirt's semantics:
//   - scaling out at the lowest free indices and scaling in by the scale-in
//     strategy (proactive by a sort policy and label selector, or
//     opportunistic, or unmanaged);
//   - revisions: each pool generation whose spec VMs were made from is kept
//     in a ControllerRevision NAME-GENERATION the pool owns, named by the
//     kubevirt.io/vm-pool-revision-name label of the VMs and VMIs made from
//     it, and deleted once nothing names it;
//   - updates: a VM whose revision's template differs from the pool's is
//     rewritten (opportunistic); under the proactive strategy (the default)
//     its running VMI is then restarted, at most maxUnavailable at a time;
//   - the pool.kubevirt.io/finalizer on the pool and its VMs, released when
//     they are deleted;
//   - spec.paused, which stops scaling and updating.
//
// It must not touch a VM's status or a VMI's spec (their controllers own
// them), and it adopts no VM it did not create, as KubeVirt's pools.
//
// The pure part (PlanFor, Order, NextStatus) is exported so its tables can
// be read and reused; Reconciler wires it to the API.
//
// See docs/controllers/pool.md.
package pool
