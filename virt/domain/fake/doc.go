// Package fake is an in-memory, deterministic virt/domain Manager for unit
// tests of callers, with injectable events and failures; it passes the same
// contract suite as virt/domain/libvirt and documents what it does not model.
//
// Status: not implemented yet (issue 4).
package fake
