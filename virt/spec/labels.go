package spec

import (
	"crypto/sha1" //nolint:gosec // not for security: KubeVirt's label value
	"encoding/hex"
	"sort"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	virtv1 "kubevirt.io/api/core/v1"
)

// ReservedLabel reports whether key is one of the kubevirt.io labels only
// virtkit's own components may set on a VMI (KubeVirt's list): each ties
// an object to an owner, a node or a migration, and the controllers and
// handlers act on it. A user who could set kubevirt.io/migrationJobUID on
// a VMI would make its launcher pod pass for the target pod of another
// VMI's migration.
func ReservedLabel(key string) bool {
	switch key {
	case virtv1.CreatedByLabel, virtv1.MigrationJobLabel, virtv1.NodeNameLabel,
		virtv1.MigrationTargetNodeNameLabel, virtv1.NodeSchedulable, virtv1.InstallStrategyLabel:
		return true
	}
	return false
}

// ValidateReservedLabels refuses what a user (not one of virtkit's own
// components) does with reserved labels: on creation (old nil) any
// reserved label, on update adding, changing or removing one. path is the
// labels' path, such as metadata.labels or spec.template.metadata.labels.
func ValidateReservedLabels(path *field.Path, labels, old map[string]string) field.ErrorList {
	var keys []string
	for k := range labels {
		keys = append(keys, k)
	}
	for k := range old {
		if _, ok := labels[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var errs field.ErrorList
	for _, k := range keys {
		if !ReservedLabel(k) {
			continue
		}
		v, set := labels[k]
		was, had := old[k]
		if set == had && v == was {
			continue
		}
		errs = append(errs, field.Forbidden(path.Key(k),
			"a reserved kubevirt.io label: only KubeVirt's own components may set, change or remove it"))
	}
	return errs
}

// InstanceID is the value of the vmi.kubevirt.io/id label
// (virtv1.VirtualMachineInstanceIDLabel) on a VMI's launcher pods, as
// KubeVirt computes it: the VMI's name when it fits a label value of 63
// characters, else its first 54 characters, a dash and the first 8 hex
// digits of the name's SHA-1. Services made by `virtctl expose` select
// launcher pods by it.
func InstanceID(vmiName string) string {
	if len(vmiName) <= validation.DNS1035LabelMaxLength {
		return vmiName
	}
	const hashLength = 8
	sum := sha1.Sum([]byte(vmiName)) //nolint:gosec // KubeVirt's label value, not for security
	return vmiName[:validation.DNS1035LabelMaxLength-hashLength-1] + "-" + hex.EncodeToString(sum[:])[:hashLength]
}
