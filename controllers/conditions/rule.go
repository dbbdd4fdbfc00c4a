package conditions

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Find returns the condition of type t in conds, nil when there is none. The
// pointer is into conds: changing it changes conds.
func (k Kind[C, T]) Find(conds []C, t T) *C {
	for i := range conds {
		if *k.fields(&conds[i]).Type == t {
			return &conds[i]
		}
	}
	return nil
}

// IsTrue reports whether conds has a condition of type t with status True
// (a pod's Ready, for example).
func (k Kind[C, T]) IsTrue(conds []C, t T) bool {
	c := k.Find(conds, t)
	return c != nil && *k.fields(c).Status == corev1.ConditionTrue
}

// Set puts c in conds, replacing the condition of its type or appending it,
// and reports whether conds changed. The timestamps follow the package's
// rule: lastTransitionTime stays the old condition's while the status stays,
// and is otherwise c's, or now when c has none; lastProbeTime stays the old
// condition's while the status and the reason stay, and is otherwise c's.
// now may be the zero Time: a condition that brings no transition time then
// keeps none, as a mirror of another object's condition does.
func (k Kind[C, T]) Set(conds *[]C, c C, now metav1.Time) (changed bool) {
	nf := k.fields(&c)
	old := k.Find(*conds, *nf.Type)
	if old == nil {
		if nf.LastTransitionTime.IsZero() {
			*nf.LastTransitionTime = now
		}
		*conds = append(*conds, c)
		return true
	}
	of := k.fields(old)
	switch {
	case *of.Status == *nf.Status && !of.LastTransitionTime.IsZero():
		*nf.LastTransitionTime = *of.LastTransitionTime
	case nf.LastTransitionTime.IsZero():
		*nf.LastTransitionTime = now
	}
	if *of.Status == *nf.Status && *of.Reason == *nf.Reason {
		*nf.LastProbeTime = *of.LastProbeTime
	}
	if equality.Semantic.DeepEqual(*old, c) {
		return false
	}
	*old = c
	return true
}

// Remove drops the condition of type t from conds and reports whether there
// was one. conds becomes nil when no condition is left, so that a status
// without conditions compares equal to one that never had any.
func (k Kind[C, T]) Remove(conds *[]C, t T) (removed bool) {
	n := len(*conds)
	*conds = slices.DeleteFunc(*conds, func(c C) bool { return *k.fields(&c).Type == t })
	if len(*conds) == 0 {
		*conds = nil
	}
	return len(*conds) != n
}
