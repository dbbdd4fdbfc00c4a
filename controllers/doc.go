// Package controllers holds the controller-runtime reconcilers that turn
// VirtualMachines into VirtualMachineInstances, VMIs into launcher pods, and
// migrations and snapshots into their steps. They import virt/ rooms; nothing
// under virt/ imports them.
//
// Status: not implemented yet (issue 7).
package controllers
