package migrate

import (
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	virtv1 "kubevirt.io/api/core/v1"
)

// Config is the effective configuration of one migration: the cluster's
// (the KubeVirt CR's spec.configuration.migrations over KubeVirt's
// defaults), refined by the MigrationPolicy that matches the VMI. It is
// plain data; Resolve makes it, Run follows it.
type Config struct {
	// Policy names the MigrationPolicy that refined the cluster's
	// configuration; empty when none matched.
	Policy string

	// ParallelMigrationsPerCluster is how many migrations may run at once
	// in the cluster (default 5). The migration controller enforces it.
	ParallelMigrationsPerCluster uint32
	// ParallelOutboundMigrationsPerNode is how many migrations may leave
	// one node at once (default 2). The migration controller enforces it.
	ParallelOutboundMigrationsPerNode uint32

	// BandwidthPerMigration limits a migration's network use, in bytes per
	// second; zero is unlimited (the default). See BandwidthMiB.
	BandwidthPerMigration int64
	// CompletionTimeoutPerGiB is how long a migration may take per GB of
	// data it moves (default 150 s); zero is no limit. See CompletionTimeout.
	CompletionTimeoutPerGiB time.Duration
	// ProgressTimeout is how long a migration may go without its remaining
	// data shrinking (default 150 s); zero is no limit.
	ProgressTimeout time.Duration
	// UtilityVolumesTimeout is how long a migration may wait, pending, for
	// utility volumes to be detached (default 150 s). The migration
	// controller enforces it.
	UtilityVolumesTimeout time.Duration

	// AllowAutoConverge lets the hypervisor slow the guest's vCPUs down
	// until its memory can be sent faster than it changes (default false).
	AllowAutoConverge bool
	// AllowPostCopy lets a migration that does not finish in time switch to
	// post-copy (default false). The guest then runs on the destination
	// before all its memory is there: a network failure loses it.
	AllowPostCopy bool
	// AllowWorkloadDisruption lets a migration past its completion timeout
	// disrupt the guest instead of being aborted: switch to post-copy when
	// AllowPostCopy, otherwise pause the guest until it is moved. When the
	// cluster and policy leave it unset it follows AllowPostCopy, as in
	// KubeVirt.
	AllowWorkloadDisruption bool
	// UnsafeMigrationOverride migrates even when the hypervisor deems it
	// unsafe (default false).
	UnsafeMigrationOverride bool

	// DisableTLS turns off the encryption of migration traffic (default
	// false). The wiring between nodes honours it.
	DisableTLS bool
	// MatchSELinuxLevelOnMigration lets the target launcher get its own
	// SELinux level (default false). Launcher pod rendering honours it.
	MatchSELinuxLevelOnMigration bool
	// Network is the dedicated migration network: a Multus
	// NetworkAttachmentDefinition, NAME in the KubeVirt CR's namespace or
	// NAMESPACE/NAME, that each handler's pod joins as interface
	// migration0 (virtv1.MigrationInterfaceName); empty is the pod network.
	// The operator puts it on the handlers' pods; a handler that has the
	// interface takes migrations on its address.
	Network string
	// NodeDrainTaintKey marks nodes to drain by migrating their VMs away
	// (default "kubevirt.io/drain").
	NodeDrainTaintKey string
}

// KubeVirt's defaults for spec.configuration.migrations.
const (
	DefaultParallelMigrationsPerCluster      = 5
	DefaultParallelOutboundMigrationsPerNode = 2
	DefaultCompletionTimeoutPerGiB           = 150 * time.Second
	DefaultProgressTimeout                   = 150 * time.Second
	DefaultUtilityVolumesTimeout             = 150 * time.Second
	DefaultNodeDrainTaintKey                 = "kubevirt.io/drain"
)

// DefaultConfig is KubeVirt's migration configuration when the KubeVirt CR
// sets nothing.
func DefaultConfig() Config {
	return Config{
		ParallelMigrationsPerCluster:      DefaultParallelMigrationsPerCluster,
		ParallelOutboundMigrationsPerNode: DefaultParallelOutboundMigrationsPerNode,
		CompletionTimeoutPerGiB:           DefaultCompletionTimeoutPerGiB,
		ProgressTimeout:                   DefaultProgressTimeout,
		UtilityVolumesTimeout:             DefaultUtilityVolumesTimeout,
		NodeDrainTaintKey:                 DefaultNodeDrainTaintKey,
	}
}

// clusterPath is where the KubeVirt CR keeps the migration configuration.
var clusterPath = field.NewPath("spec", "configuration", "migrations")

// ClusterConfig returns KubeVirt's defaults with what mc (the KubeVirt CR's
// spec.configuration.migrations; nil for none) sets applied. Negative
// durations and bandwidths, and a network that is no
// NetworkAttachmentDefinition's name, are rejected with the field's path.
func ClusterConfig(mc *virtv1.MigrationConfiguration) (Config, error) {
	c, errs := clusterConfig(mc)
	return c, errs.ToAggregate()
}

// ValidateClusterConfig reports, as a list, what ClusterConfig rejects in mc.
func ValidateClusterConfig(mc *virtv1.MigrationConfiguration) field.ErrorList {
	_, errs := clusterConfig(mc)
	return errs
}

func clusterConfig(mc *virtv1.MigrationConfiguration) (Config, field.ErrorList) {
	c := DefaultConfig()
	if mc == nil {
		return c, nil
	}
	var errs field.ErrorList
	if mc.ParallelMigrationsPerCluster != nil {
		c.ParallelMigrationsPerCluster = *mc.ParallelMigrationsPerCluster
	}
	if mc.ParallelOutboundMigrationsPerNode != nil {
		c.ParallelOutboundMigrationsPerNode = *mc.ParallelOutboundMigrationsPerNode
	}
	if mc.BandwidthPerMigration != nil {
		c.BandwidthPerMigration, errs = bandwidth(errs, clusterPath.Child("bandwidthPerMigration"), mc.BandwidthPerMigration)
	}
	if mc.CompletionTimeoutPerGiB != nil {
		c.CompletionTimeoutPerGiB, errs = seconds(errs, clusterPath.Child("completionTimeoutPerGiB"), *mc.CompletionTimeoutPerGiB)
	}
	if mc.ProgressTimeout != nil {
		c.ProgressTimeout, errs = seconds(errs, clusterPath.Child("progressTimeout"), *mc.ProgressTimeout)
	}
	if mc.UtilityVolumesTimeout != nil {
		c.UtilityVolumesTimeout, errs = seconds(errs, clusterPath.Child("utilityVolumesTimeout"), *mc.UtilityVolumesTimeout)
	}
	setBool(&c.AllowAutoConverge, mc.AllowAutoConverge)
	setBool(&c.AllowPostCopy, mc.AllowPostCopy)
	c.AllowWorkloadDisruption = c.AllowPostCopy
	setBool(&c.AllowWorkloadDisruption, mc.AllowWorkloadDisruption)
	setBool(&c.UnsafeMigrationOverride, mc.UnsafeMigrationOverride)
	setBool(&c.DisableTLS, mc.DisableTLS)
	setBool(&c.MatchSELinuxLevelOnMigration, mc.MatchSELinuxLevelOnMigration)
	if mc.Network != nil {
		c.Network, errs = network(errs, clusterPath.Child("network"), *mc.Network)
	}
	if mc.NodeDrainTaintKey != nil {
		c.NodeDrainTaintKey = *mc.NodeDrainTaintKey
	}
	return c, errs
}

// APIConfiguration returns c as KubeVirt's MigrationConfiguration, every
// field set, as a VMI's status.migrationState.migrationConfiguration
// records it.
func (c Config) APIConfiguration() *virtv1.MigrationConfiguration {
	secs := func(d time.Duration) *int64 { s := int64(d / time.Second); return &s }
	return &virtv1.MigrationConfiguration{
		NodeDrainTaintKey:                 &c.NodeDrainTaintKey,
		ParallelOutboundMigrationsPerNode: &c.ParallelOutboundMigrationsPerNode,
		ParallelMigrationsPerCluster:      &c.ParallelMigrationsPerCluster,
		AllowAutoConverge:                 &c.AllowAutoConverge,
		BandwidthPerMigration:             resource.NewQuantity(c.BandwidthPerMigration, resource.BinarySI),
		CompletionTimeoutPerGiB:           secs(c.CompletionTimeoutPerGiB),
		ProgressTimeout:                   secs(c.ProgressTimeout),
		UtilityVolumesTimeout:             secs(c.UtilityVolumesTimeout),
		UnsafeMigrationOverride:           &c.UnsafeMigrationOverride,
		AllowPostCopy:                     &c.AllowPostCopy,
		AllowWorkloadDisruption:           &c.AllowWorkloadDisruption,
		DisableTLS:                        &c.DisableTLS,
		Network:                           &c.Network,
		MatchSELinuxLevelOnMigration:      &c.MatchSELinuxLevelOnMigration,
	}
}

// postCopyAllowed reports whether a migration may switch to post-copy: the
// configuration allows post-copy and a disruption of the workload, as
// KubeVirt requires both.
func (c Config) postCopyAllowed() bool { return c.AllowPostCopy && c.AllowWorkloadDisruption }

func setBool(dst *bool, v *bool) {
	if v != nil {
		*dst = *v
	}
}

func seconds(errs field.ErrorList, p *field.Path, s int64) (time.Duration, field.ErrorList) {
	const most = int64(1<<63-1) / int64(time.Second)
	switch {
	case s < 0:
		return 0, append(errs, field.Invalid(p, s, "must not be negative"))
	case s > most:
		return 0, append(errs, field.Invalid(p, s, "too large"))
	}
	return time.Duration(s) * time.Second, errs
}

// network checks a migration network's name: a NetworkAttachmentDefinition
// of the KubeVirt CR's namespace, or NAMESPACE/NAME of another, as Multus
// reads a pod's network selection.
func network(errs field.ErrorList, p *field.Path, s string) (string, field.ErrorList) {
	if s == "" {
		return "", errs
	}
	name, ns := s, ""
	if n, rest, ok := strings.Cut(s, "/"); ok {
		ns, name = n, rest
		for _, msg := range validation.IsDNS1123Label(ns) {
			errs = append(errs, field.Invalid(p, s, "namespace "+msg))
		}
	}
	for _, msg := range validation.IsDNS1123Subdomain(name) {
		errs = append(errs, field.Invalid(p, s, "NetworkAttachmentDefinition name "+msg))
	}
	return s, errs
}

func bandwidth(errs field.ErrorList, p *field.Path, q *resource.Quantity) (int64, field.ErrorList) {
	if q.Sign() < 0 {
		return 0, append(errs, field.Invalid(p, q.String(), "must not be negative"))
	}
	return q.Value(), errs
}
