package spec

import (
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	virtv1 "kubevirt.io/api/core/v1"
)

// KubeVirt's defaults for room to grow under LiveUpdate.
const (
	defaultHotplugRatio = 4
	// maxHotplugVCPUs bounds a defaulted maxSockets: machine types differ
	// in their maximum, KubeVirt takes 512 for all.
	maxHotplugVCPUs = 512
)

// defaultHotplugMaximums is KubeVirt's setupHotplug: with WithLiveUpdate,
// a VMI without maxSockets gets the cluster's maxCpuSockets (or its
// sockets, when more) or Ratio times its sockets, at most 512 vCPUs and
// never fewer than it has; one without maxGuest gets the cluster's
// maxGuest or Ratio times its guest memory, when memory hotplug is
// possible for it (validateMemoryHotplug: a 128Mi guest, say, gets none).
// Not on arm64, as in KubeVirt.
func defaultHotplugMaximums(c *config, spec *virtv1.VirtualMachineInstanceSpec) {
	l := c.liveUpdate
	if l == nil || c.effectiveArch(spec) == ArchARM64 {
		return
	}
	ratio := l.Ratio
	if ratio == 0 {
		ratio = defaultHotplugRatio
	}
	if cpu := spec.Domain.CPU; cpu != nil && cpu.MaxSockets == 0 && cpu.Sockets > 0 {
		switch {
		case l.MaxCPUSockets != 0:
			cpu.MaxSockets = max(l.MaxCPUSockets, cpu.Sockets)
		default:
			cpu.MaxSockets = cpu.Sockets * ratio
			if per := max(cpu.Cores, 1) * max(cpu.Threads, 1); cpu.MaxSockets*per > maxHotplugVCPUs {
				cpu.MaxSockets = max(maxHotplugVCPUs/per, cpu.Sockets)
			}
		}
	}
	m := spec.Domain.Memory
	if m == nil || m.MaxGuest != nil || m.Guest == nil {
		return
	}
	maxGuest := l.MaxGuest
	if maxGuest == nil {
		maxGuest = resource.NewQuantity(m.Guest.Value()*int64(ratio), resource.BinarySI)
	}
	if maxGuest.Cmp(*m.Guest) < 0 || len(validateMemoryHotplug(field.NewPath("spec", "domain", "memory"), spec, *m.Guest, *maxGuest)) > 0 {
		return
	}
	q := maxGuest.DeepCopy()
	m.MaxGuest = &q
}
