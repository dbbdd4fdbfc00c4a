package clone

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Keep says whether filters keep key, as KubeVirt's clone filters are
// documented: a filter is a key, a prefix ending in *, or * alone; one
// starting with ! leaves out what the rest matches. A key is kept when a
// filter keeps it and none leaves it out. No filters keep every key.
func Keep(filters []string, key string) bool {
	if len(filters) == 0 {
		return true
	}
	kept := false
	for _, f := range filters {
		if neg, ok := strings.CutPrefix(f, "!"); ok {
			if matches(neg, key) {
				return false
			}
			continue
		}
		kept = kept || matches(f, key)
	}
	return kept
}

func matches(filter, key string) bool {
	if prefix, ok := strings.CutSuffix(filter, "*"); ok {
		return strings.HasPrefix(key, prefix)
	}
	return filter == key
}

// ValidateFilters checks filters as KubeVirt's webhook does: ! only
// first, * only last, and ! alone is no filter.
func ValidateFilters(filters []string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, f := range filters {
		p := path.Index(i)
		switch {
		case f == "":
			errs = append(errs, field.Invalid(p, f, "a filter cannot be empty"))
		case f == "!":
			errs = append(errs, field.Invalid(p, f, "a negation character alone is not a filter"))
		case strings.Contains(f[1:], "!"):
			errs = append(errs, field.Invalid(p, f, "the negation character ! may only start a filter"))
		case strings.Contains(f[:len(f)-1], "*"):
			errs = append(errs, field.Invalid(p, f, "the wildcard * may only end a filter"))
		}
	}
	return errs
}
