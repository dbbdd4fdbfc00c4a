// Package migration is the VirtualMachineInstanceMigration controller: it
// turns each kubevirt.io/v1 VirtualMachineInstanceMigration into a target
// launcher pod on another node and follows the migration through KubeVirt's
// phases, Pending, Scheduling, Scheduled, PreparingTarget, TargetReady,
// Running, Succeeded and Failed, from what the target pod does and what the
// two nodes' handlers write in the VMI's status.migrationState.
//
// It owns:
//   - the target pod (controllers/vmi.RenderTargetPod: the VMI's launcher
//     pod, labelled kubevirt.io/migrationJobUID and kubevirt.io/vmi-name,
//     with its own node folder and a required node affinity that keeps it
//     off the source node), its creation and, for a migration that failed or
//     was cancelled, its deletion;
//   - the parallel limits: at most parallelMigrationsPerCluster migrations
//     in flight (Scheduling to Running), at most
//     parallelOutboundMigrationsPerNode leaving one node; a migration over
//     them waits in Pending;
//   - the VMI's status.migrationState fields of the start (migrationUid,
//     sourceNode, sourcePod, targetPod, targetNode, mode, the resolved
//     migrationConfiguration and migrationPolicyName, from the KubeVirt CR
//     and MigrationPolicies through virt/migrate.Resolve), abortRequested
//     when a running migration is deleted, and failed when it ends before
//     the source started it;
//   - the migration's status: phase, phase transition timestamps, and the
//     VMI's migrationState mirrored; the kubevirt.io/migrationJobFinalize
//     finalizer, which holds a deleted migration until it is aborted and its
//     target pod deleted (virtctl migrate-cancel deletes the migration);
//   - beyond KubeVirt, the copies of a VMI's ReadWriteOnce claims
//     (virt/migrate.CopyClaim), for a VMI not live-migratable only for
//     them: it creates them, names them in the VMI's status.migratedVolumes
//     and spec.volumes, and on success points the VM's template at them
//     and lets them go; on failure it points the VMI back at its claims
//     and deletes them;
//   - for a VMI with backend storage (persistent EFI variables or vTPM),
//     the target's own backend-storage claim (labelled
//     kubevirt.io/migrationName), the migrationState's
//     sourcePersistentStatePVCName and targetPersistentStatePVCName, and,
//     as KubeVirt's controller does, the handoff when the migration
//     succeeds (the target's claim labelled for the VM, the source's
//     deleted) or the target's claim's deletion when it fails.
//
// The handlers own the rest of migrationState: the target's handler sets
// targetNodeAddress when the target pod is prepared, and completed,
// endTimestamp and the VMI's nodeName when the guest runs there; the
// source's handler sets startTimestamp and mode, and failed, abortStatus
// and failureReason when the migration does not complete (see
// controllers/handler and docs/migration.md).
//
// It must not touch the VMI's spec, metadata or any status field but
// migrationState, save the volumes and migratedVolumes of claims it copies,
// nor the VMI's own launcher pod, nor a VM but the claims of its template
// once their copies took over, nor a claim but those it copies into and
// the backend-storage claims named above. Decide is the pure state
// machine; Reconciler wires it to the API.
package migration
