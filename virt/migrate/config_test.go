package migrate_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"gotest.tools/v3/assert"
	"k8s.io/apimachinery/pkg/api/resource"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/migrate"
)

func quantity(s string) *resource.Quantity { q := resource.MustParse(s); return &q }

func TestClusterConfig(t *testing.T) {
	defaults := migrate.Config{
		ParallelMigrationsPerCluster:      5,
		ParallelOutboundMigrationsPerNode: 2,
		CompletionTimeoutPerGiB:           150 * time.Second,
		ProgressTimeout:                   150 * time.Second,
		UtilityVolumesTimeout:             150 * time.Second,
		NodeDrainTaintKey:                 "kubevirt.io/drain",
	}
	with := func(edit func(*migrate.Config)) migrate.Config {
		c := defaults
		edit(&c)
		return c
	}
	for _, tc := range []struct {
		name string
		in   *virtv1.MigrationConfiguration
		want migrate.Config
	}{
		{"no configuration: KubeVirt's defaults", nil, defaults},
		{"empty configuration: KubeVirt's defaults", &virtv1.MigrationConfiguration{}, defaults},
		{"every field", &virtv1.MigrationConfiguration{
			NodeDrainTaintKey:                 new("example.com/drain"),
			ParallelOutboundMigrationsPerNode: new(uint32(4)),
			ParallelMigrationsPerCluster:      new(uint32(10)),
			AllowAutoConverge:                 new(true),
			BandwidthPerMigration:             quantity("64Mi"),
			CompletionTimeoutPerGiB:           new(int64(30)),
			ProgressTimeout:                   new(int64(20)),
			UtilityVolumesTimeout:             new(int64(10)),
			UnsafeMigrationOverride:           new(true),
			AllowPostCopy:                     new(true),
			AllowWorkloadDisruption:           new(true),
			DisableTLS:                        new(true),
			Network:                           new("migration-net"),
			MatchSELinuxLevelOnMigration:      new(true),
		}, migrate.Config{
			ParallelMigrationsPerCluster:      10,
			ParallelOutboundMigrationsPerNode: 4,
			BandwidthPerMigration:             64 << 20,
			CompletionTimeoutPerGiB:           30 * time.Second,
			ProgressTimeout:                   20 * time.Second,
			UtilityVolumesTimeout:             10 * time.Second,
			AllowAutoConverge:                 true,
			AllowPostCopy:                     true,
			AllowWorkloadDisruption:           true,
			UnsafeMigrationOverride:           true,
			DisableTLS:                        true,
			MatchSELinuxLevelOnMigration:      true,
			Network:                           "migration-net",
			NodeDrainTaintKey:                 "example.com/drain",
		}},
		{"workload disruption follows post-copy when unset",
			&virtv1.MigrationConfiguration{AllowPostCopy: new(true)},
			with(func(c *migrate.Config) { c.AllowPostCopy, c.AllowWorkloadDisruption = true, true })},
		{"workload disruption set apart from post-copy",
			&virtv1.MigrationConfiguration{AllowPostCopy: new(true), AllowWorkloadDisruption: new(false)},
			with(func(c *migrate.Config) { c.AllowPostCopy = true })},
		{"workload disruption without post-copy (pause to complete)",
			&virtv1.MigrationConfiguration{AllowWorkloadDisruption: new(true)},
			with(func(c *migrate.Config) { c.AllowWorkloadDisruption = true })},
		{"zero timeouts and bandwidth stay zero (no limit)",
			&virtv1.MigrationConfiguration{CompletionTimeoutPerGiB: new(int64(0)), ProgressTimeout: new(int64(0)), BandwidthPerMigration: quantity("0")},
			with(func(c *migrate.Config) { c.CompletionTimeoutPerGiB, c.ProgressTimeout = 0, 0 })},
		{"decimal bandwidth", &virtv1.MigrationConfiguration{BandwidthPerMigration: quantity("1M")},
			with(func(c *migrate.Config) { c.BandwidthPerMigration = 1_000_000 })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := migrate.ClusterConfig(tc.in)
			assert.NilError(t, err)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("ClusterConfig (-want +got):\n%s", d)
			}
		})
	}
}

func TestClusterConfigRejectsNegativeValuesByPath(t *testing.T) {
	_, err := migrate.ClusterConfig(&virtv1.MigrationConfiguration{
		CompletionTimeoutPerGiB: new(int64(-1)),
		ProgressTimeout:         new(int64(-5)),
		BandwidthPerMigration:   quantity("-1Mi"),
	})
	assert.ErrorContains(t, err, "spec.configuration.migrations.completionTimeoutPerGiB: Invalid value: -1: must not be negative")
	assert.ErrorContains(t, err, "spec.configuration.migrations.progressTimeout: Invalid value: -5")
	assert.ErrorContains(t, err, `spec.configuration.migrations.bandwidthPerMigration: Invalid value: "-1Mi"`)
}

// A migration network is a NetworkAttachmentDefinition's name, with its
// namespace or without; ValidateClusterConfig lists what ClusterConfig
// rejects, field by field.
func TestClusterConfigNetwork(t *testing.T) {
	for _, tc := range []struct{ network, wantErr string }{
		{"migration-net", ""},
		{"infra/migration.net", ""},
		{"", ""},
		{"Migration_Net", `spec.configuration.migrations.network: Invalid value: "Migration_Net": NetworkAttachmentDefinition name a lowercase RFC 1123 subdomain`},
		{"in.fra/net", `spec.configuration.migrations.network: Invalid value: "in.fra/net": namespace must not contain dots`},
		{"net@eth1", `spec.configuration.migrations.network: Invalid value: "net@eth1": NetworkAttachmentDefinition name`},
		{"a/b/c", `NetworkAttachmentDefinition name a lowercase RFC 1123 subdomain`},
	} {
		t.Run(tc.network, func(t *testing.T) {
			mc := &virtv1.MigrationConfiguration{Network: &tc.network}
			c, err := migrate.ClusterConfig(mc)
			errs := migrate.ValidateClusterConfig(mc)
			if tc.wantErr == "" {
				assert.NilError(t, err)
				assert.Equal(t, len(errs), 0)
				assert.Equal(t, c.Network, tc.network)
				return
			}
			assert.ErrorContains(t, err, tc.wantErr)
			assert.Assert(t, len(errs) == 1 && errs[0].Field == "spec.configuration.migrations.network", "%v", errs)
		})
	}
}

// The configuration a VMI's status records reads back to the same Config.
func TestAPIConfigurationRoundTrip(t *testing.T) {
	in := migrate.Config{
		ParallelMigrationsPerCluster:      7,
		ParallelOutboundMigrationsPerNode: 3,
		BandwidthPerMigration:             5 << 20,
		CompletionTimeoutPerGiB:           40 * time.Second,
		ProgressTimeout:                   60 * time.Second,
		UtilityVolumesTimeout:             90 * time.Second,
		AllowAutoConverge:                 true,
		AllowPostCopy:                     true,
		AllowWorkloadDisruption:           false,
		UnsafeMigrationOverride:           true,
		Network:                           "mig",
		NodeDrainTaintKey:                 "kubevirt.io/drain",
	}
	api := in.APIConfiguration()
	assert.Equal(t, api.BandwidthPerMigration.String(), "5Mi")
	assert.Equal(t, *api.CompletionTimeoutPerGiB, int64(40))
	out, err := migrate.ClusterConfig(api)
	assert.NilError(t, err)
	if d := cmp.Diff(in, out); d != "" {
		t.Errorf("round trip (-in +out):\n%s", d)
	}
}
