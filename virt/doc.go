// Package virt is the SDK's front door: a [Machine] is one
// VirtualMachineInstance on one host, composed from the rooms below it:
// virt/storage plans and prepares its disks, virt/network plans and sets up
// its NICs in the pod's network namespace, virt/domain converts it to a
// domain, and a domain Manager defines and starts it. Every effect comes in
// through a functional option, so each has a fake (virt/storage/fake,
// network.Fake, virt/domain/fake), and start-up is a named chain of steps
// ([DefaultSteps]) that a caller can edit: insert, replace or remove a step.
// A step that fails undoes the steps before it, so a failed start leaves
// nothing behind.
//
// virt-handler is meant to be a thin loop over Machines (issue 7).
//
// It must not import controllers/ or daemons/, and no room below imports it.
// virt/libvirtd (a private libvirtd) and virt/launcher (a VMI's launcher) sit
// beside it.
package virt
