// Package conditions is the one way the reconcilers under controllers/ find,
// set and remove the conditions of KubeVirt's kinds (VirtualMachineInstance,
// VirtualMachine, VirtualMachineInstanceMigration,
// VirtualMachineInstanceReplicaSet, VirtualMachinePool,
// VirtualMachineExport) and read those of pods, with one rule for the two timestamps:
//
//   - lastTransitionTime changes only when the status changes (or the
//     condition is new); the reason and message may change under it;
//   - lastProbeTime stays while the status and the reason stay, as
//     KubeVirt's condition managers keep such a condition; otherwise it is
//     the new condition's.
//
// Each kind's condition struct differs, so a Kind names how to reach the
// fields of one of them; VMI, VM, Migration, ReplicaSet, Pool, Export and
// Pod are the kinds the controllers use. The package holds no state and touches no
// API server.
package conditions
