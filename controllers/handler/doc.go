// Package handler is virt-handler as a library: the per-node agent that
// drives the guests of the VirtualMachineInstances scheduled to its node. It
// is a controller-runtime reconciler ([Reconciler]) over the VMIs whose
// status.nodeName is its node, and a thin loop over virt.Machine: each guest
// is one Machine on its launcher's private libvirt, reached over libvirt's
// own RPC (no private handler-launcher protocol). daemons/virt-handler wires
// it with the libvirt connector; an integrator can run it in their own
// manager.
//
// What it does, with KubeVirt's semantics:
//
//   - starts the guest of a Scheduled VMI once its launcher is ready
//     (launcher.Layout.ReadyFile): finds the pod's network namespace and file
//     system from the libvirt socket's peer ([OpenPod]), plans and prepares
//     storage in the pod's file system (storage.WithFS), sets up the network
//     and runs DHCP in the pod's namespace, defines and starts the domain, and
//     reports Running in one status write (interfaces, conditions, migration
//     method, volume targets, machine type, topology, memory);
//   - follows each launcher connection's domain events: pause and unpause
//     (the Paused condition), a guest that shut down (Succeeded), crashed or
//     was killed (Failed with a reason), a launcher that ended (the phase its
//     exit code gives, as the VMI controller reads it), or vanished;
//   - stops the guest of a deleted VMI: ACPI shutdown, destroy after
//     terminationGracePeriodSeconds, every start step undone, then the final
//     phase;
//   - after a restart, adopts running guests without disturbing them, from
//     the plans it keeps per VMI in Config.StateDir (virt.Machine.Adopt): no
//     set-up again, DHCP served again from the new process, no status write
//     when nothing changed;
//   - attaches and detaches hotpluggable volumes as the VMI's spec lists them
//     (virt/storage/hotplug);
//   - implements nodeapi.Ops for virt-api: Pause, Unpause, SoftReboot,
//     Console and VNC of the guests it runs;
//   - live migration, on both nodes (docs/migration.md): as the target, a
//     second reconciler keyed by VirtualMachineInstanceMigration prepares
//     storage and network in the target pod as for a start, without a
//     domain, reports the target ready, and takes the VMI over once the
//     guest runs there; as the source, it runs virt/migrate.Run through a
//     migration proxy (unix sockets in the source pod's folder forwarded by
//     a MigrationDialer to the target launcher's sockets), cancels it on
//     abortRequested, and reports a migration that did not complete.
//
// It owns the VMI's status fields a node reports (phase from Scheduled on,
// interfaces, the Ready, Paused, LiveMigratable and Synchronized conditions,
// migrationMethod and migrationTransport, volumeStatus, machine,
// currentCPUTopology, memory; nodeName when a migration's target takes the
// VMI over; migrationState's targetNodeAddress, targetNodeDomainDetected,
// targetNodeDomainReadyTimestamp, completed and endTimestamp as the target,
// startTimestamp, mode, failed, failureReason and abortStatus as the
// source), the Warning events of the failures those
// report (StatusWarnings), the guest list its metrics read (Guests, for
// metrics.DomainStats) and its per-VMI records in Config.StateDir.
// It must not touch the VMI's metadata (finalizers and labels are the VMI
// controller's), its spec, launcher pods, or anything in a pod's network
// namespace or file system that its Machine did not make. It imports virt/
// packages; nothing under virt/ imports it.
package handler
