// Package virt is the SDK's front door: a [Machine] is one
// VirtualMachineInstance on one host, composed from the packages below it:
// virt/storage plans and prepares its disks, virt/network plans and sets up
// its NICs (virt/network/netns performs the plan in the pod's network
// namespace), virt/domain converts it to a
// domain, and a domain Manager defines and starts it. Every effect comes in
// through a functional option, so each has a fake (virt/storage/fake,
// network.Fake, virt/domain/fake), and start-up is a named chain of steps
// ([DefaultSteps], a [Steps]) that a caller edits by step name: insert
// after or before, replace, edit or remove a step.
// A step that fails undoes the steps before it, so a failed start leaves
// nothing behind.
//
// virt-handler (controllers/handler) is a thin loop over Machines.
//
// It must not import controllers/ or daemons/, and no package below imports it.
// virt/libvirtd (a private libvirtd) and virt/launcher (a VMI's launcher) sit
// beside it.
package virt
