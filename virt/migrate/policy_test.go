package migrate_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"gotest.tools/v3/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	migrationsv1 "kubevirt.io/api/migrations/v1alpha1"

	"github.com/virtkit/virtkit/virt/migrate"
)

func policy(name string, vmi, ns map[string]string) migrationsv1.MigrationPolicy {
	return migrationsv1.MigrationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: migrationsv1.MigrationPolicySpec{Selectors: &migrationsv1.Selectors{
			VirtualMachineInstanceSelector: vmi,
			NamespaceSelector:              ns,
		}},
	}
}

type labels = map[string]string

// The example of KubeVirt's user guide (Migration Policies, "Policies'
// Precedence"): a VMI {size: small, os: fedora, gpu: nvidia} in a namespace
// {priority: high, bandwidth: medium, hpc-workload: true}, and seven
// policies listed from the highest precedence to the lowest; the last one
// does not match.
func TestMatchPolicyUserGuidePrecedence(t *testing.T) {
	vmi := labels{"size": "small", "os": "fedora", "gpu": "nvidia"}
	ns := labels{"priority": "high", "bandwidth": "medium", "hpc-workload": "true"}
	ranked := []migrationsv1.MigrationPolicy{
		policy("p1", labels{"size": "small", "gpu": "nvidia"}, labels{"priority": "high", "bandwidth": "medium"}),
		policy("p2", labels{"size": "small", "gpu": "nvidia"}, labels{"priority": "high", "hpc-workload": "true"}),
		policy("p3", labels{"size": "small", "gpu": "nvidia"}, labels{"priority": "high"}),
		policy("p4", labels{"size": "small"}, labels{"priority": "high", "hpc-workload": "true"}),
		policy("p5", labels{"gpu": "nvidia"}, labels{"priority": "high"}),
		policy("p6", labels{"gpu": "nvidia"}, labels{}),
		policy("p7", labels{"gpu": "intel"}, labels{"priority": "high"}),
	}
	// Take the winner away, one after the other, listed in reverse so that
	// the list's order cannot be what decides.
	for i := range 6 {
		left := make([]migrationsv1.MigrationPolicy, 0, len(ranked))
		for j := len(ranked) - 1; j >= i; j-- {
			left = append(left, ranked[j])
		}
		got := migrate.MatchPolicy(left, vmi, ns)
		assert.Assert(t, got != nil, "with %d policies left: no match", len(left))
		assert.Equal(t, got.Name, ranked[i].Name, "with policies %s.. left", ranked[i].Name)
	}
	assert.Assert(t, migrate.MatchPolicy(ranked[6:], vmi, ns) == nil, "p7's gpu label does not match")
}

func TestMatchPolicy(t *testing.T) {
	vmi := labels{"app": "db", "tier": "gold"}
	ns := labels{"env": "prod"}
	noSelectors := migrationsv1.MigrationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "no-selectors"}}
	for _, tc := range []struct {
		name     string
		policies []migrationsv1.MigrationPolicy
		vmi, ns  labels
		want     string // "" for no match
	}{
		{"no policies", nil, vmi, ns, ""},
		{"a policy without selectors matches nothing", []migrationsv1.MigrationPolicy{noSelectors}, vmi, ns, ""},
		{"empty selectors match every VMI", []migrationsv1.MigrationPolicy{policy("all", nil, nil)}, nil, nil, "all"},
		{"every selector label must match", []migrationsv1.MigrationPolicy{policy("p", labels{"app": "db", "zone": "a"}, nil)}, vmi, ns, ""},
		{"values must be equal", []migrationsv1.MigrationPolicy{policy("p", labels{"app": "web"}, nil)}, vmi, ns, ""},
		{"a VMI without labels does not match a VMI selector", []migrationsv1.MigrationPolicy{policy("p", labels{"app": "db"}, nil)}, nil, ns, ""},
		{"a namespace without labels does not match a namespace selector", []migrationsv1.MigrationPolicy{policy("p", nil, labels{"env": "prod"})}, vmi, nil, ""},
		{"both selectors must match", []migrationsv1.MigrationPolicy{policy("p", labels{"app": "db"}, labels{"env": "dev"})}, vmi, ns, ""},
		{"more matching labels win", []migrationsv1.MigrationPolicy{
			policy("one", labels{"app": "db"}, nil),
			policy("two", labels{"app": "db"}, labels{"env": "prod"}),
			policy("all", nil, nil),
		}, vmi, ns, "two"},
		{"at equal count, more VMI labels win", []migrationsv1.MigrationPolicy{
			policy("ns-heavy", labels{"app": "db"}, labels{"env": "prod"}),
			policy("vmi-heavy", labels{"app": "db", "tier": "gold"}, nil),
		}, vmi, ns, "vmi-heavy"},
		{"then the first name wins", []migrationsv1.MigrationPolicy{
			policy("b", labels{"tier": "gold"}, nil),
			policy("a", labels{"app": "db"}, nil),
			policy("c", labels{"app": "db"}, nil),
		}, vmi, ns, "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := migrate.MatchPolicy(tc.policies, tc.vmi, tc.ns)
			name := ""
			if got != nil {
				name = got.Name
			}
			assert.Equal(t, name, tc.want)
		})
	}
}

func TestResolve(t *testing.T) {
	vmi := &virtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "vm", Labels: labels{"workload": "db"}}}
	ns := labels{"env": "prod"}
	cluster := &virtv1.MigrationConfiguration{
		BandwidthPerMigration:        quantity("100Mi"),
		CompletionTimeoutPerGiB:      new(int64(60)),
		AllowAutoConverge:            new(true),
		ParallelMigrationsPerCluster: new(uint32(3)),
	}
	base, err := migrate.ClusterConfig(cluster)
	assert.NilError(t, err)
	with := func(edit func(*migrate.Config)) migrate.Config {
		c := base
		edit(&c)
		return c
	}
	spec := func(name string, edit func(*migrationsv1.MigrationPolicySpec)) migrationsv1.MigrationPolicy {
		p := policy(name, labels{"workload": "db"}, nil)
		edit(&p.Spec)
		return p
	}
	for _, tc := range []struct {
		name     string
		policies []migrationsv1.MigrationPolicy
		want     migrate.Config
	}{
		{"no policy: the cluster's", nil, base},
		{"a policy that does not match changes nothing",
			[]migrationsv1.MigrationPolicy{policy("other", labels{"workload": "web"}, nil)}, base},
		{"a matching policy that sets nothing is still named",
			[]migrationsv1.MigrationPolicy{policy("empty", labels{"workload": "db"}, nil)},
			with(func(c *migrate.Config) { c.Policy = "empty" })},
		{"the policy's fields override the cluster's",
			[]migrationsv1.MigrationPolicy{spec("fast", func(s *migrationsv1.MigrationPolicySpec) {
				s.BandwidthPerMigration = quantity("1Gi")
				s.CompletionTimeoutPerGiB = new(int64(10))
				s.AllowAutoConverge = new(false)
				s.AllowPostCopy = new(true)
				s.AllowWorkloadDisruption = new(false)
			})},
			with(func(c *migrate.Config) {
				c.Policy = "fast"
				c.BandwidthPerMigration = 1 << 30
				c.CompletionTimeoutPerGiB = 10 * time.Second
				c.AllowAutoConverge = false
				c.AllowPostCopy = true
			})},
		{"workload disruption follows the policy's post-copy when unset",
			[]migrationsv1.MigrationPolicy{spec("pc", func(s *migrationsv1.MigrationPolicySpec) { s.AllowPostCopy = new(true) })},
			with(func(c *migrate.Config) { c.Policy, c.AllowPostCopy, c.AllowWorkloadDisruption = "pc", true, true })},
		{"the most specific policy wins",
			[]migrationsv1.MigrationPolicy{
				spec("broad", func(s *migrationsv1.MigrationPolicySpec) { s.CompletionTimeoutPerGiB = new(int64(1)) }),
				func() migrationsv1.MigrationPolicy {
					p := policy("narrow", labels{"workload": "db"}, labels{"env": "prod"})
					p.Spec.CompletionTimeoutPerGiB = new(int64(2))
					return p
				}(),
			},
			with(func(c *migrate.Config) { c.Policy, c.CompletionTimeoutPerGiB = "narrow", 2*time.Second })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := migrate.Resolve(cluster, tc.policies, vmi, ns)
			assert.NilError(t, err)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("Resolve (-want +got):\n%s", d)
			}
		})
	}
}

func TestResolveRejectsBadPolicyNamingIt(t *testing.T) {
	vmi := &virtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Labels: labels{"a": "b"}}}
	p := policy("broken", labels{"a": "b"}, nil)
	p.Spec.CompletionTimeoutPerGiB = new(int64(-3))
	_, err := migrate.Resolve(nil, []migrationsv1.MigrationPolicy{p}, vmi, nil)
	assert.ErrorContains(t, err, "MigrationPolicy broken: spec.completionTimeoutPerGiB: Invalid value: -3: must not be negative")
	var pe *migrate.PolicyError
	assert.Assert(t, errors.As(err, &pe))
	assert.Equal(t, pe.Policy, "broken")

	_, err = migrate.Resolve(&virtv1.MigrationConfiguration{ProgressTimeout: new(int64(-1))}, nil, vmi, nil)
	assert.ErrorContains(t, err, "spec.configuration.migrations.progressTimeout")
}
