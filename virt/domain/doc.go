// Package domain converts a VirtualMachineInstance spec, together with facts
// about the host and the plans of virt/storage and virt/network, into a libvirt
// domain document (libvirtxml.Domain), and maps domain state back to VMI
// status. It also defines the Manager interface for one hypervisor connection,
// implemented by virt/domain/libvirt and virt/domain/fake.
//
// It is pure and builds with CGO_ENABLED=0: no libvirt connection, no cluster
// objects, no globals.
//
// Status: not implemented yet (issues 3 and 4).
package domain
