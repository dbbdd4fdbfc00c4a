package migrate

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
	virtv1 "kubevirt.io/api/core/v1"
	migrationsv1 "kubevirt.io/api/migrations/v1alpha1"
)

// Resolve returns the effective migration configuration of vmi: the
// cluster's (ClusterConfig of the KubeVirt CR's
// spec.configuration.migrations; nil for none) with the fields of the
// MigrationPolicy that matches vmi (MatchPolicy, given the labels of vmi's
// namespace) applied over it. A policy sets allowAutoConverge,
// bandwidthPerMigration, completionTimeoutPerGiB, allowPostCopy and
// allowWorkloadDisruption; what it leaves unset keeps the cluster's value,
// except that allowWorkloadDisruption follows the policy's allowPostCopy
// when only that is set, as in KubeVirt. Parallel limits, timeouts other
// than the completion's, and the network are cluster-wide only.
//
// Invalid values (negative timeouts or bandwidths) are rejected with the
// field's path: spec.configuration.migrations.* for the cluster,
// spec.* of the named MigrationPolicy for a policy.
func Resolve(cluster *virtv1.MigrationConfiguration, policies []migrationsv1.MigrationPolicy,
	vmi *virtv1.VirtualMachineInstance, namespaceLabels map[string]string) (Config, error) {
	c, err := ClusterConfig(cluster)
	if err != nil {
		return c, err
	}
	var vmiLabels map[string]string
	if vmi != nil {
		vmiLabels = vmi.Labels
	}
	p := MatchPolicy(policies, vmiLabels, namespaceLabels)
	if p == nil {
		return c, nil
	}
	return applyPolicy(c, p)
}

// applyPolicy sets what the policy sets.
func applyPolicy(c Config, p *migrationsv1.MigrationPolicy) (Config, error) {
	spec := p.Spec
	path := field.NewPath("spec")
	var errs field.ErrorList
	c.Policy = p.Name
	setBool(&c.AllowAutoConverge, spec.AllowAutoConverge)
	if spec.BandwidthPerMigration != nil {
		c.BandwidthPerMigration, errs = bandwidth(errs, path.Child("bandwidthPerMigration"), spec.BandwidthPerMigration)
	}
	if spec.CompletionTimeoutPerGiB != nil {
		c.CompletionTimeoutPerGiB, errs = seconds(errs, path.Child("completionTimeoutPerGiB"), *spec.CompletionTimeoutPerGiB)
	}
	setBool(&c.AllowPostCopy, spec.AllowPostCopy)
	switch {
	case spec.AllowWorkloadDisruption != nil:
		c.AllowWorkloadDisruption = *spec.AllowWorkloadDisruption
	case spec.AllowPostCopy != nil:
		c.AllowWorkloadDisruption = *spec.AllowPostCopy
	}
	if err := errs.ToAggregate(); err != nil {
		return c, &PolicyError{Policy: p.Name, Err: err}
	}
	return c, nil
}

// PolicyError reports a MigrationPolicy whose values cannot be used.
type PolicyError struct {
	Policy string
	Err    error
}

func (e *PolicyError) Error() string { return "MigrationPolicy " + e.Policy + ": " + e.Err.Error() }

func (e *PolicyError) Unwrap() error { return e.Err }

// MatchPolicy returns the policy that applies to a VMI with vmiLabels in a
// namespace with namespaceLabels, or nil when none does. It points into
// policies.
//
// A policy matches when every label of its virtualMachineInstanceSelector
// is on the VMI and every label of its namespaceSelector is on the
// namespace, with the same values; a policy without selectors matches
// nothing, one with empty selectors matches every VMI. Among matching
// policies the most specific wins: the most matching labels in all, then
// the most matching VMI labels, then the name first in lexicographic
// order. (KubeVirt's user guide words the last tie-break as the order of
// the matching label keys; its controller, and this function, use the
// policy names, which KubeVirt documents in code as "arbitrary yet
// deterministic".)
func MatchPolicy(policies []migrationsv1.MigrationPolicy, vmiLabels, namespaceLabels map[string]string) *migrationsv1.MigrationPolicy {
	var best *migrationsv1.MigrationPolicy
	var bestScore score
	for i := range policies {
		p := &policies[i]
		s, ok := match(p, vmiLabels, namespaceLabels)
		if !ok {
			continue
		}
		if best == nil || s.better(bestScore) || (s == bestScore && p.Name < best.Name) {
			best, bestScore = p, s
		}
	}
	return best
}

// score is how specifically a policy matches.
type score struct{ vmi, namespace int }

func (s score) better(o score) bool {
	if s.vmi+s.namespace != o.vmi+o.namespace {
		return s.vmi+s.namespace > o.vmi+o.namespace
	}
	return s.vmi > o.vmi
}

func match(p *migrationsv1.MigrationPolicy, vmiLabels, namespaceLabels map[string]string) (score, bool) {
	sel := p.Spec.Selectors
	if sel == nil {
		return score{}, false
	}
	if !contains(vmiLabels, sel.VirtualMachineInstanceSelector) || !contains(namespaceLabels, sel.NamespaceSelector) {
		return score{}, false
	}
	return score{vmi: len(sel.VirtualMachineInstanceSelector), namespace: len(sel.NamespaceSelector)}, true
}

// contains reports whether labels has every key of want with its value.
func contains(labels map[string]string, want migrationsv1.LabelSelector) bool {
	for k, v := range want {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}
