// Package domaintest is the contract suite of virt/domain's Manager: one
// sequence of steps that every implementation must pass, run against the
// fake (virt/domain/fake), libvirt's in-process test driver
// (test:///default) and a private libvirtd booting a real guest under
// software emulation (both in virt/domain/libvirt).
//
// An implementation's test calls Run with a function that returns a Target:
// the Manager plus what the suite needs to know about the hypervisor behind
// it (Capabilities). Where a capability is missing the suite does not skip
// the step: it checks that the Manager says so with the right sentinel
// (ErrUnsupported, ErrAgentUnavailable), so an implementation cannot pass
// by failing quietly.
//
// RunMigration is the contract of domain.Migrator between two hypervisors:
// a MigrationTarget gives a source and a destination (two fakes joined with
// AddPeer, or two private libvirtd), and the suite migrates domains between
// them, polling JobStats as virt/migrate does.
//
// It imports no cgo package and builds with CGO_ENABLED=0.
package domaintest
