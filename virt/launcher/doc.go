// Package launcher is the life of one VMI's launcher, as a library: the
// daemons/virt-launcher binary is a thin wrapper around [Run], and an
// integrator can run a launcher in-process.
//
// A launcher owns, for one VMI: a private libvirtd (virt/libvirtd) whose
// socket it publishes in a per-VMI folder shared with the node's handler
// ([Layout]); readiness (a file the pod's readiness probe checks); watching
// the one domain the handler defines and starts over that socket; and the
// end: on a stop request a graceful ACPI shutdown within the grace period,
// then destroy; when the guest ends, the launcher ends, with a [Result] that
// says why (exit code 0 for a clean shutdown or a requested stop, non-zero
// with a reason for a crash, a destroy it did not ask for, or a libvirtd that
// died). Whatever happens, it stops libvirtd and every process of its
// namespace before it returns: no QEMU or libvirtd is left behind, also when
// either is killed under it.
//
// It does not define or start the domain (the handler does, through
// virt/domain), and it does not touch the pod's network or storage.
package launcher
