// Package migrate owns live migration policy and its execution on one
// node: which configuration a VMI's migration follows, and a monitored
// migration between two hypervisor connections that follows it.
//
// Configuration (pure, no I/O): [Resolve] takes the KubeVirt CR's
// spec.configuration.migrations, the cluster's MigrationPolicies, the VMI
// and its namespace's labels, and returns the effective [Config]: KubeVirt's
// defaults, overridden by the CR, refined by the most specific matching
// policy ([MatchPolicy]). [Config.CompletionTimeout] and [DataSize] compute
// the completion timeout as KubeVirt does.
//
// Volume migration (pure): [PlanVolumeUpdate] decides, as KubeVirt's VM
// controller does under updateVolumesStrategy: Migration, what to do about
// a running VMI whose VM names other claims for some volumes: start a
// volume migration (the VMI's status.migratedVolumes and spec.volumes), call
// one off, or refuse with the fields; [ChangedClaims], [VolumesReady] and
// [VolumesChanging] are the checks the controllers share.
//
// Execution: [Run] starts a peer-to-peer live migration of a running domain
// from a source [Host] (a domain.Manager that is also a domain.Migrator,
// such as virt/domain/libvirt's or virt/domain/fake's Manager) to a
// [Destination], polls its progress on an injected clock, switches to
// post-copy or pauses the guest when the configuration allows and the
// migration is late or stalled, and otherwise aborts it, leaving the guest
// running on the source. Why a migration did not complete is an [*Error]
// matching [ErrCompletionTimeout], [ErrStalled], [ErrCancelled] or
// [ErrFailed].
//
//	cfg, err := migrate.Resolve(kv.Spec.Configuration.MigrationConfiguration, policies, vmi, ns.Labels)
//	res, err := migrate.Run(ctx, source, domainName, migrate.Destination{
//		URI:          "qemu+unix:///system?socket=/run/target/libvirt-sock",
//		MigrationURI: "tcp://10.0.0.2:49152",
//		Host:         target,
//	}, cfg, migrate.WithDataSize(migrate.DataSize(vmi, 0)))
//
// It does not decide when to migrate, choose or prepare the target (the
// migration controller and the target's handler do), carry the traffic
// between nodes, or write VMI status: it returns what happened. It builds
// with CGO_ENABLED=0; the libvirt side is virt/domain/libvirt's. See
// docs/migration.md.
package migrate
