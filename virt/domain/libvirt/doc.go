// Package libvirt implements virt/domain's Manager on libvirt.org/go/libvirt.
// It is the only package in the tree that links libvirt through cgo.
//
// It must not decide policy (what to define, when to migrate): callers pass
// documents made by virt/domain.
//
// Status: the Manager arrives with issue 4. Its tests already exercise the
// real substrate: see test/smoke for a guest booted through a private libvirtd.
package libvirt
