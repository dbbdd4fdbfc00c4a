// Package workloadupdate moves running VMIs onto launchers of the virtkit
// version in force after an upgrade, as KubeVirt's workload updater does.
//
// A VMI is outdated when its status.launcherContainerImageVersion (the
// image of the launcher that holds its guest, which controllers/vmi
// records once its pod is bound) is not the launcher image new pods get. A
// VMI whose volume migration waits (VirtualMachine updateVolumesStrategy:
// Migration; its VolumesChange condition is True) needs a migration too,
// and so does one whose spec grew past its launcher pod (LiveUpdate of CPU
// sockets or guest memory; controllers/vmi's GrowsByMigration): the target
// pod is sized for the new spec, and the handler hot-plugs there.
// Once the installation is Deployed and not updating (the KubeVirt CR's
// status.phase and deployment IDs, which virt-operator writes; a CR without
// a phase has no operator and is always settled), the controller
// ([Reconciler]):
//   - writes the number of outdated VMIs to the KubeVirt CR's
//     status.outdatedVirtualMachineInstanceWorkloads;
//   - with LiveMigrate among spec.workloadUpdateStrategy.workloadUpdateMethods,
//     creates a VirtualMachineInstanceMigration (kubevirt-workload-update-...,
//     annotated kubevirt.io/workloadUpdateMigration) for each live-migratable
//     outdated VMI, each VMI whose volumes wait for their migration and
//     each live-migratable VMI that grew past its pod, no more than the cluster's parallel migration limit leaves room for;
//   - with Evict, evicts the launcher pods of the other outdated VMIs,
//     batchEvictionSize (default 10) every batchEvictionInterval (default 1
//     minute);
//   - deletes (cancels) the migrations it made for VMIs that are no longer
//     outdated, a rollback, unless the target's domain is ready already;
//   - looks again every 30 seconds while outdated VMIs are left.
//
// An empty list of methods updates nothing, as in KubeVirt: the count is
// still reported. Which VMIs to act on, and how many, is decided by the
// pure [PlanFor]; the Reconciler only reads and writes.
//
// It owns the KubeVirt CR's status.outdatedVirtualMachineInstanceWorkloads
// and the migrations it creates, which run through controllers/migration
// like any other. It never writes a VMI.
package workloadupdate
