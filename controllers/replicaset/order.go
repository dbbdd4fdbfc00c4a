package replicaset

import (
	"slices"

	virtv1 "kubevirt.io/api/core/v1"
)

// DeletionOrder returns vmis sorted so that the first are the ones a scale
// down deletes: the least advanced first (not yet scheduled, then scheduled,
// then running without being ready, then ready), and of equals the youngest
// first, then by name. KubeVirt deletes whichever its cache lists first; a
// replica set scaled down here keeps the VMIs that serve longest. vmis is not
// changed.
func DeletionOrder(vmis []*virtv1.VirtualMachineInstance) []*virtv1.VirtualMachineInstance {
	out := slices.Clone(vmis)
	slices.SortStableFunc(out, func(a, b *virtv1.VirtualMachineInstance) int {
		if ra, rb := progress(a), progress(b); ra != rb {
			return ra - rb
		}
		if c := b.CreationTimestamp.Compare(a.CreationTimestamp.Time); c != 0 {
			return c
		}
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out
}

// progress ranks how far vmi has come: lower is deleted first.
func progress(vmi *virtv1.VirtualMachineInstance) int {
	switch {
	case ready(vmi):
		return 3
	case vmi.Status.Phase == virtv1.Running:
		return 2
	case vmi.Status.Phase == virtv1.Scheduled:
		return 1
	}
	return 0
}
