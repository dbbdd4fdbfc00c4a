// Package domain converts a VirtualMachineInstance spec, together with facts
// about the host and the plans of virt/storage and virt/network, into a libvirt
// domain document (libvirtxml.Domain), and maps domain state back to VMI
// status. It also defines the Manager interface for one hypervisor connection,
// implemented by virt/domain/libvirt and virt/domain/fake.
//
// It is pure and builds with CGO_ENABLED=0: no libvirt connection, no cluster
// objects, no globals.
//
// Conversion is [Convert] (a VMI plus [Host] facts to a libvirtxml.Domain) and
// [Status] (domain state to VMI phase, reason and conditions); see
// docs/sdk/domain.md. The [Manager] interface and its typed errors are in
// manager.go and errors.go; see docs/sdk/manager.md.
package domain
