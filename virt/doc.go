// Package virt is the SDK's front door: a Machine is one VirtualMachineInstance
// on one host, composed from the rooms below it (virt/spec, virt/storage,
// virt/network, virt/domain) with every external effect injectable through
// functional options.
//
// It must not import controllers/ or daemons/, and no room below imports it.
//
// Status: the Machine arrives with the control-plane work (issue 7); today the
// rooms below are used directly. virt/libvirtd, the private libvirtd a launcher
// runs, is already here.
package virt
