// Package spec defaults and validates kubevirt.io/v1 VirtualMachine and
// VirtualMachineInstance specs and expands instancetypes and preferences, as
// pure functions returning field.ErrorList with exact field paths.
//
// It sits at the bottom of the tree: it imports only API types and
// apimachinery, never another virtkit room, and performs no I/O.
//
// Status: not implemented yet (issue 3).
package spec
