package spec

import (
	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	virtv1 "kubevirt.io/api/core/v1"
)

// defaultResourceRequests is KubeVirt's setDefaultResourceRequests: a limit
// without a request becomes the request, and a memory request missing is
// derived from guest memory (scaled by the memory overcommit percentage) or,
// lacking that, from the hugepage size.
func defaultResourceRequests(c *config, spec *virtv1.VirtualMachineInstanceSpec) {
	res := &spec.Domain.Resources
	for _, name := range [...]k8sv1.ResourceName{k8sv1.ResourceCPU, k8sv1.ResourceMemory} {
		limit, hasLimit := res.Limits[name]
		if !hasLimit || limit.IsZero() {
			continue
		}
		if req, ok := res.Requests[name]; ok && !req.IsZero() {
			continue
		}
		if res.Requests == nil {
			res.Requests = k8sv1.ResourceList{}
		}
		res.Requests[name] = limit.DeepCopy()
	}

	if _, ok := res.Requests[k8sv1.ResourceMemory]; ok {
		return
	}
	var memory *resource.Quantity
	if m := spec.Domain.Memory; m != nil && m.Guest != nil {
		memory = m.Guest
	}
	if m := spec.Domain.Memory; memory == nil && m != nil && m.Hugepages != nil {
		if q, err := resource.ParseQuantity(m.Hugepages.PageSize); err == nil {
			memory = &q
		}
	}
	if memory == nil || memory.Value() <= 0 {
		return
	}
	if res.Requests == nil {
		res.Requests = k8sv1.ResourceList{}
	}
	if c.memoryOvercommit == 100 {
		res.Requests[k8sv1.ResourceMemory] = memory.DeepCopy()
		return
	}
	v := memory.Value() * 100 / int64(c.memoryOvercommit)
	res.Requests[k8sv1.ResourceMemory] = *resource.NewQuantity(v, memory.Format)
}

// defaultCPUTopology is KubeVirt's SetDefaultGuestCPUTopology: with no
// sockets, cores or threads given, the guest gets one core and one thread per
// socket and as many sockets as the CPU limit (else request) asks for, since
// sockets perform best for a guest that does not know its host topology.
func defaultCPUTopology(spec *virtv1.VirtualMachineInstanceSpec) {
	cpu := spec.Domain.CPU
	if cpu != nil && (cpu.Cores != 0 || cpu.Sockets != 0 || cpu.Threads != 0) {
		return
	}
	if cpu == nil {
		cpu = &virtv1.CPU{}
		spec.Domain.CPU = cpu
	}
	sockets := uint32(1)
	res := spec.Domain.Resources
	if q, ok := res.Limits[k8sv1.ResourceCPU]; ok {
		sockets = vcpusOf(q)
	} else if q, ok := res.Requests[k8sv1.ResourceCPU]; ok {
		sockets = vcpusOf(q)
	}
	cpu.Sockets, cpu.Cores, cpu.Threads = sockets, 1, 1
}

// vcpusOf rounds a CPU quantity up to whole vCPUs, at least 1; absurd values
// are clamped rather than wrapped so validation can report them.
func vcpusOf(q resource.Quantity) uint32 {
	v := q.Value()
	switch {
	case v < 1:
		return 1
	case v > maxVCPUs:
		return maxVCPUs + 1
	}
	return uint32(v)
}

// defaultGuestMemory states in the spec the guest memory KubeVirt's converter
// would use when spec.domain.memory.guest is empty: the memory request (a
// limit alone has already become the request).
func defaultGuestMemory(spec *virtv1.VirtualMachineInstanceSpec) {
	if m := spec.Domain.Memory; m != nil && m.Guest != nil {
		return
	}
	req, ok := spec.Domain.Resources.Requests[k8sv1.ResourceMemory]
	if !ok || req.Sign() <= 0 {
		return
	}
	if spec.Domain.Memory == nil {
		spec.Domain.Memory = &virtv1.Memory{}
	}
	g := req.DeepCopy()
	spec.Domain.Memory.Guest = &g
}
