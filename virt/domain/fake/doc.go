// Package fake is an in-memory, deterministic virt/domain Manager for unit
// tests of callers. It passes the same contract suite (virt/domain/domaintest)
// as virt/domain/libvirt.
//
// Test hooks:
//
//   - FailNext(op, err): the next call of an operation fails with err.
//   - Hold(op): calls of an operation block until released or their context
//     ends, as on a hung hypervisor.
//   - Emit(event): publish any event to subscribers.
//   - GuestPrint and GuestInput: the guest's side of the serial console.
//   - SetAgent / WithAgent: replace the modelled guest agent.
//   - IgnoreACPI: a guest that ignores the power button; Crash: a guest that dies.
//   - WithClock: the clock that stamps events, times CPU use and drives
//     migrations.
//   - AddPeer, SetMigrationModel / WithMigrationModel, FailMigration: the
//     destinations of migrations, how they progress, and a failing one.
//
// What it does not model (use virt/domain/libvirt with test:///default or a
// private libvirtd, as the contract tests do, for these):
//
//   - No guest runs: a started domain is a state, not a process. Boot,
//     shutdown and reboot complete at once; there is no boot time, no
//     firmware, no kernel.
//   - Documents are checked only for what libvirt's parser checks first
//     (name, type, memory); no schema validation, no defaults or addresses
//     added, no device aliases except for hotplugged devices.
//   - Statistics are synthetic: CPU time is running time by the clock plus a
//     fixed tick per Stats call; memory is the document's; I/O counters are zero.
//   - The console is an in-memory pipe: nothing prints unless GuestPrint is
//     called; input is only collected (GuestInput).
//   - The agent answers guest-ping and guest-info at once; timeouts are not modelled.
//   - Hotplug covers disks and interfaces only; the guest releases a
//     detached device at once. No PCI slots, no bus limits.
//   - There is one connection that never breaks: no EventConnectionLost,
//     unless emitted with Emit.
//   - Migration (migration.go) is a model, not a copy: progress follows a
//     MigrationModel and the clock, advancing only when JobStats is called;
//     peers are other fake Managers joined with AddPeer. No snapshots,
//     managed save or NVRAM.
package fake
