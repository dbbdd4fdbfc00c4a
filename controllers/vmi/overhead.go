package vmi

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	virtv1 "kubevirt.io/api/core/v1"
)

// Memory overhead terms, from docs/performance.md, section "Overhead the
// controller requests per launcher pod".
const (
	mi = 1 << 20
	// OverheadLauncher is virt-launcher plus its private libvirtd (measured
	// 55.0 MiB RSS, rounded up).
	OverheadLauncher = 64 * mi
	// OverheadQEMUKVM is QEMU's own memory under KVM, before the per-vCPU and
	// page-table terms (KubeVirt's estimate; not measured on these machines).
	OverheadQEMUKVM = 40 * mi
	// OverheadPerVCPU is added per vCPU under KVM.
	OverheadPerVCPU = 8 * mi
	// OverheadQEMUTCG is QEMU's own memory under software emulation
	// (measured 228-246 MiB, almost flat in guest size).
	OverheadQEMUTCG = 240 * mi
)

// MemoryOverhead is the memory a launcher pod needs beyond the guest's own
// memory: the launcher and libvirtd, plus QEMU's own memory, which is
// 40 MiB + 8 MiB per vCPU + guest/512 (page tables) under KVM, and a flat
// 240 MiB under software emulation (TCG).
func MemoryOverhead(guest resource.Quantity, vcpus int64, emulation bool) resource.Quantity {
	b := int64(OverheadLauncher)
	if emulation {
		b += OverheadQEMUTCG
	} else {
		b += OverheadQEMUKVM + vcpus*OverheadPerVCPU + (guest.Value()+511)/512
	}
	return *resource.NewQuantity(b, resource.BinarySI)
}

// GuestMemory is the memory the guest sees: spec.domain.memory.guest, else
// spec.domain.resources.requests.memory.
func GuestMemory(vmi *virtv1.VirtualMachineInstance) (resource.Quantity, error) {
	d := vmi.Spec.Domain
	if d.Memory != nil && d.Memory.Guest != nil {
		return *d.Memory.Guest, nil
	}
	if q, ok := d.Resources.Requests[corev1.ResourceMemory]; ok {
		return q, nil
	}
	return resource.Quantity{}, fmt.Errorf("%w: spec.domain.memory.guest or spec.domain.resources.requests.memory must be set", ErrInvalidVMI)
}

// VCPUs is the guest's vCPU count: sockets x cores x threads of
// spec.domain.cpu when set, else the CPU request (or limit) rounded up, else 1.
func VCPUs(vmi *virtv1.VirtualMachineInstance) int64 {
	d := vmi.Spec.Domain
	if c := d.CPU; c != nil && (c.Sockets+c.Cores+c.Threads) > 0 {
		return int64(max(c.Sockets, 1)) * int64(max(c.Cores, 1)) * int64(max(c.Threads, 1))
	}
	for _, l := range []corev1.ResourceList{d.Resources.Requests, d.Resources.Limits} {
		if q, ok := l[corev1.ResourceCPU]; ok && !q.IsZero() {
			return (q.MilliValue() + 999) / 1000
		}
	}
	return 1
}
