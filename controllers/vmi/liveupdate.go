package vmi

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/controllers/conditions"
)

// Annotations of a launcher pod of a VMI that can grow (spec.domain.cpu.
// maxSockets or spec.domain.memory.maxGuest): the vCPUs and the guest
// memory (bytes) its resources were computed for. The handler hot-plugs
// vCPUs and memory into a guest only as far as its pod was sized for,
// KubeVirt's rule (a pod's requests do not grow): a VMI whose spec grew
// beyond its pod's moves to a new pod by a live migration first.
const (
	AnnSizedVCPUs       = "virtkit.io/sized-vcpus"
	AnnSizedGuestMemory = "virtkit.io/sized-guest-memory"
)

// growable reports whether vmi's vCPUs or memory can grow while it runs.
func growable(vmi *virtv1.VirtualMachineInstance) bool {
	d := vmi.Spec.Domain
	return d.CPU != nil && d.CPU.MaxSockets > 0 || d.Memory != nil && d.Memory.MaxGuest != nil
}

// sizeAnnotations records on pod what it was sized for, for a VMI that
// can grow.
func sizeAnnotations(pod *corev1.Pod, vmi *virtv1.VirtualMachineInstance) {
	if !growable(vmi) {
		return
	}
	pod.Annotations[AnnSizedVCPUs] = strconv.FormatInt(VCPUs(vmi), 10)
	if g, err := GuestMemory(vmi); err == nil {
		pod.Annotations[AnnSizedGuestMemory] = strconv.FormatInt(g.Value(), 10)
	}
}

// SizedFor reports how many vCPUs and how much guest memory (bytes) pod,
// a launcher pod, was sized for; zero for what it does not say (a pod of
// a VMI that cannot grow, or of an older controller).
func SizedFor(pod *corev1.Pod) (vcpus, memory int64) {
	vcpus, _ = strconv.ParseInt(pod.Annotations[AnnSizedVCPUs], 10, 64)
	memory, _ = strconv.ParseInt(pod.Annotations[AnnSizedGuestMemory], 10, 64)
	return vcpus, memory
}

// Reasons of the HotVCPUChange and HotMemoryChange conditions (KubeVirt
// sets none): whether the guest waits for a live migration to a pod sized
// for it, or for the handler to plug what its pod was sized for.
const (
	ReasonHotplugMigrationRequired = "MigrationRequired"
	ReasonHotplugPending           = "HotplugPending"
)

// Messages of the HotVCPUChange and HotMemoryChange conditions, naming
// the launcher pod they judged.
const (
	msgMigrationRequired = "launcher pod %s is too small for the spec: a live migration moves the guest to one sized for it"
	msgHotplugPending    = "launcher pod %s is sized for the spec: the handler hot-plugs it"
)

// GrowsByMigration reports whether vmi waits for a live migration to grow
// (LiveUpdate): a HotVCPUChange or True HotMemoryChange condition judged
// its current launcher pod too small. A condition that judged a pod the
// guest has left since (the migration's target is another) is stale: the
// next status says what the new pod holds.
func GrowsByMigration(vmi *virtv1.VirtualMachineInstance) bool {
	for _, c := range vmi.Status.Conditions {
		if c.Type != virtv1.VirtualMachineInstanceVCPUChange && c.Type != virtv1.VirtualMachineInstanceMemoryChange ||
			c.Status != corev1.ConditionTrue || c.Reason != ReasonHotplugMigrationRequired {
			continue
		}
		var pod string
		if _, err := fmt.Sscanf(c.Message, msgMigrationRequired, &pod); err != nil {
			return true // not worded by this controller: trust the reason
		}
		if ms := vmi.Status.MigrationState; ms != nil && ms.Completed && !ms.Failed && ms.TargetPod != "" && ms.TargetPod != pod {
			continue
		}
		return true
	}
	return false
}

// syncHotplugConditions sets, as KubeVirt's VMI controller does, the
// HotVCPUChange condition while a running VMI's spec asks for other vCPUs
// than its status reports (status.currentCPUTopology) and HotMemoryChange
// while it asks for other guest memory than the handler requested of the
// domain (status.memory.guestRequested). The reason says whether pod, the
// current launcher pod, was sized for the spec (ReasonHotplugPending: the
// handler plugs) or not (ReasonHotplugMigrationRequired:
// controllers/workloadupdate migrates the VMI to a pod that is). The
// condition goes once the status matches; a HotMemoryChange the handler
// set False (the hotplug failed) stays: the VM then asks for a restart.
func syncHotplugConditions(st *virtv1.VirtualMachineInstanceStatus, vmi *virtv1.VirtualMachineInstance, pod *corev1.Pod, ts metav1.Time) {
	if st.Phase != virtv1.Running {
		return
	}
	d := vmi.Spec.Domain
	sizedCPUs, sizedMemory := SizedFor(pod)
	set := func(t virtv1.VirtualMachineInstanceConditionType, want, sized bool) {
		c := conditions.VMI().Find(st.Conditions, t)
		if !want {
			conditions.VMI().Remove(&st.Conditions, t)
			return
		}
		reason, msg := ReasonHotplugMigrationRequired, fmt.Sprintf(msgMigrationRequired, pod.Name)
		if sized {
			reason, msg = ReasonHotplugPending, fmt.Sprintf(msgHotplugPending, pod.Name)
		}
		if c == nil || c.Status == corev1.ConditionTrue && c.Message != msg {
			conditions.VMI().Set(&st.Conditions, virtv1.VirtualMachineInstanceCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: msg}, ts)
		}
	}
	cpu := false
	if top := st.CurrentCPUTopology; top != nil && d.CPU != nil && d.CPU.MaxSockets > 0 {
		cur := int64(max(top.Sockets, 1)) * int64(max(top.Cores, 1)) * int64(max(top.Threads, 1))
		cpu = VCPUs(vmi) != cur
	}
	set(virtv1.VirtualMachineInstanceVCPUChange, cpu, sizedCPUs >= VCPUs(vmi))
	mem, memSized := false, false
	if m := st.Memory; m != nil && m.GuestRequested != nil && d.Memory != nil && d.Memory.Guest != nil && d.Memory.MaxGuest != nil {
		mem = d.Memory.Guest.Value() != m.GuestRequested.Value()
		memSized = sizedMemory >= d.Memory.Guest.Value()
	}
	set(virtv1.VirtualMachineInstanceMemoryChange, mem, memSized)
}
