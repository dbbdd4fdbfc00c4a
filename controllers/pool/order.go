package pool

import (
	"cmp"
	"slices"

	virtv1 "kubevirt.io/api/core/v1"
	poolv1 "kubevirt.io/api/pool/v1beta1"

	"github.com/virtkit/virtkit/virt/spec"
)

// Shuffle puts VMs in a random order, for the Random sort policy. Tests
// pass one that keeps the order.
type Shuffle func(vms []*virtv1.VirtualMachine)

// Order sorts vms, the VMs of the pool named pool, by a sort policy (nil:
// Random, KubeVirt's default): AscendingOrder and DescendingOrder by index,
// Newest and Oldest by creation, Random by shuffle. Ties keep their order.
func Order(pool string, vms []*virtv1.VirtualMachine, policy *poolv1.VirtualMachinePoolSortPolicy, shuffle Shuffle) {
	p := poolv1.VirtualMachinePoolSortPolicyRandom
	if policy != nil {
		p = *policy
	}
	index := func(vm *virtv1.VirtualMachine) int {
		i, _ := spec.PoolIndex(pool, vm.Name)
		return i
	}
	switch p {
	case poolv1.VirtualMachinePoolSortPolicyAscendingOrder:
		slices.SortStableFunc(vms, func(a, b *virtv1.VirtualMachine) int { return cmp.Compare(index(a), index(b)) })
	case poolv1.VirtualMachinePoolSortPolicyDescendingOrder:
		slices.SortStableFunc(vms, func(a, b *virtv1.VirtualMachine) int { return cmp.Compare(index(b), index(a)) })
	case poolv1.VirtualMachinePoolSortPolicyNewest:
		slices.SortStableFunc(vms, func(a, b *virtv1.VirtualMachine) int { return b.CreationTimestamp.Compare(a.CreationTimestamp.Time) })
	case poolv1.VirtualMachinePoolSortPolicyOldest:
		slices.SortStableFunc(vms, func(a, b *virtv1.VirtualMachine) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
	default:
		shuffle(vms)
	}
}
