package vmi

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	virtv1 "kubevirt.io/api/core/v1"
)

// hugepagesVolume is the launcher's hugetlbfs, an emptyDir of medium
// HugePages at hugepagesPath, where libvirt finds it for the guest's
// memory backing.
const (
	hugepagesVolume = "hugepages"
	hugepagesPath   = "/dev/hugepages"
)

// hugepages returns the resource of the VMI's hugepage size
// (hugepages-2Mi, hugepages-1Gi: the kubelet's names, canonical whatever
// the spelling) and whether the VMI asks for hugepages.
func hugepages(vmi *virtv1.VirtualMachineInstance) (corev1.ResourceName, bool, error) {
	m := vmi.Spec.Domain.Memory
	if m == nil || m.Hugepages == nil {
		return "", false, nil
	}
	q, err := resource.ParseQuantity(m.Hugepages.PageSize)
	if err != nil || q.Sign() <= 0 {
		return "", false, fmt.Errorf("%w: spec.domain.memory.hugepages.pageSize: want a hugepage size such as 2Mi or 1Gi, got %q",
			ErrInvalidVMI, m.Hugepages.PageSize)
	}
	return corev1.ResourceName(corev1.ResourceHugePagesPrefix + q.String()), true, nil
}

// dedicatedCPUs is the number of whole CPUs a VMI with
// dedicatedCpuPlacement asks for (one per vCPU, and one for the emulator
// thread with isolateEmulatorThread), or 0 without it.
func dedicatedCPUs(vmi *virtv1.VirtualMachineInstance) int64 {
	c := vmi.Spec.Domain.CPU
	if c == nil || !c.DedicatedCPUPlacement {
		return 0
	}
	n := VCPUs(vmi)
	if c.IsolateEmulatorThread {
		n++
	}
	return n
}

// placeResources adjusts the compute container's requests and limits for
// hugepages and dedicated CPUs, as KubeVirt does:
//   - hugepages: the guest's memory is requested (and limited) as the
//     hugepage resource; the memory request (and limit) keep the overhead
//     only;
//   - dedicatedCpuPlacement: whole CPUs, requests equal to limits for CPU
//     and memory, so that the pod is Guaranteed and the kubelet's static
//     CPU manager gives it exclusive CPUs, which the handler then pins.
func placeResources(vmi *virtv1.VirtualMachineInstance, guest, overhead resource.Quantity, req, lim corev1.ResourceList) error {
	name, ok, err := hugepages(vmi)
	if err != nil {
		return err
	}
	if ok {
		req[name], lim[name] = guest.DeepCopy(), guest.DeepCopy()
		req[corev1.ResourceMemory] = overhead.DeepCopy()
		if _, limited := lim[corev1.ResourceMemory]; limited {
			lim[corev1.ResourceMemory] = overhead.DeepCopy()
		}
	}
	if n := dedicatedCPUs(vmi); n > 0 {
		cpus := *resource.NewQuantity(n, resource.DecimalSI)
		req[corev1.ResourceCPU], lim[corev1.ResourceCPU] = cpus.DeepCopy(), cpus.DeepCopy()
		lim[corev1.ResourceMemory] = req[corev1.ResourceMemory].DeepCopy()
	}
	return nil
}

// hugepagesMount is the hugetlbfs volume and mount of a VMI with
// hugepages; none without.
func hugepagesMount(vmi *virtv1.VirtualMachineInstance) ([]corev1.Volume, []corev1.VolumeMount) {
	if _, ok, err := hugepages(vmi); !ok || err != nil {
		return nil, nil
	}
	return []corev1.Volume{{Name: hugepagesVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumHugePages}}}},
		[]corev1.VolumeMount{{Name: hugepagesVolume, MountPath: hugepagesPath}}
}
