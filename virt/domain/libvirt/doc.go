// Package libvirt implements virt/domain's Manager on libvirt.org/go/libvirt.
// It is the only package in the tree that links libvirt through cgo.
//
// It must not decide policy (what to define, when to migrate): callers pass
// documents made by virt/domain.
//
//	m, err := libvirt.New(ctx, "qemu:///system?socket=/run/vkt/libvirt-sock", libvirt.WithLogger(log))
//	defer m.Close()
//	err = m.Define(ctx, doc)
//	err = m.Start(ctx, doc.Name, domain.StartOptions{})
//
// Behaviour worth knowing:
//
//   - Deadlines: every libvirt call is a blocking C call; the Manager runs it
//     on its own goroutine and returns when the caller's context ends. The C
//     call may still complete afterwards (a started domain stays started);
//     its result is dropped.
//   - Reconnection: when libvirtd goes away the connection's close callback
//     (or a failing call) marks it lost; the next call dials again, and while
//     anyone listens to Events a background loop re-dials with backoff and
//     re-registers the event callbacks. Calls made while no daemon answers
//     fail with domain.ErrConnectionLost.
//   - Event loop: libvirt delivers events, close notices, keepalives and
//     console data only to a process that runs an event loop. The first New
//     registers libvirt's default implementation and runs it on a goroutine
//     for the life of the process: the package's one piece of process-wide
//     state (see eventloop.go), because libvirt's loop is process-wide.
//   - Console: the first serial or console device of type pty, streamed
//     through a non-blocking libvirt stream. A serial device writing to a
//     file cannot be streamed; give it type pty and a <log file=.../> to keep
//     a file as well.
//   - Shutdown presses the ACPI power button; drivers that do not let the
//     caller pick the method (test:///default) use their own graceful one.
//   - Guest agent: through virDomainQemuAgentCommand; the domain needs an
//     org.qemu.guest_agent.0 channel and an agent in the guest.
//   - Migration (domain.Migrator, migrate.go): peer to peer with
//     virDomainMigrateToURI3, on a connection opened for the migration so
//     that JobStats and AbortJob on the Manager's own connection are not
//     held up by the long call. virt/migrate drives it.
//
// The test driver test:///default needs no daemon and runs the contract
// suite (virt/domain/domaintest) in milliseconds; it has no console, agent,
// hotplug or paused start, which the suite checks are reported as such.
package libvirt
