// Package controllers holds the controller-runtime reconcilers that turn
// VirtualMachines into VirtualMachineInstances, VMIs into launcher pods, and
// migrations and snapshots into their steps. They import virt/ packages; nothing
// under virt/ imports them.
//
// controllers/vm is the VirtualMachine controller (run strategies, start and
// stop requests, printable status, crash-loop backoff); see
// docs/controllers/vm.md. controllers/vmi is the VirtualMachineInstance
// controller (launcher pod rendering with the documented overhead, phases up
// to Scheduled, pod failures surfaced with their reason); see
// docs/controllers/vmi.md. controllers/migration is the
// VirtualMachineInstanceMigration controller (target pods, parallel limits,
// phases, cancel) and controllers/evacuation turns node drains (refused by
// virt-api's virtapi/eviction webhook) into migrations for VMIs whose
// evictionStrategy asks for it; see
// docs/migration.md. The snapshot controllers are still to come. AddMetrics registers virt-controller's
// Prometheus collectors over the manager's cache (docs/metrics.md).
package controllers
