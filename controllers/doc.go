// Package controllers holds the controller-runtime reconcilers that turn
// VirtualMachines into VirtualMachineInstances, VMIs into launcher pods, and
// migrations and snapshots into their steps. They import virt/ rooms; nothing
// under virt/ imports them.
//
// controllers/vm is the VirtualMachine controller (run strategies, start and
// stop requests, printable status, crash-loop backoff); see
// docs/controllers/vm.md. The VMI, migration and snapshot controllers are
// still to come (issues 7 and 9).
package controllers
