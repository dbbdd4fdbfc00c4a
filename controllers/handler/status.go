package handler

import (
	"net/netip"
	"slices"
	"strings"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/controllers/conditions"
	vmictl "github.com/virtkit/virtkit/controllers/vmi"
	"github.com/virtkit/virtkit/virt/domain"
	"github.com/virtkit/virtkit/virt/network"
	"github.com/virtkit/virtkit/virt/spec"
	"github.com/virtkit/virtkit/virt/storage/backendstorage"
)

// Facts are what the handler knows about a VMI's guest when it reports the
// VMI's status.
type Facts struct {
	// Domain is the domain's state; nil when there is no domain.
	Domain *domain.DomainState
	// Ending, when set, is how the guest ended as the launcher reported it
	// (or that the launcher was lost); it overrides Domain.
	Ending *Ending
	// Network is the network plan the guest was started with.
	Network network.Plan
	// Running holds facts read from the running domain's document.
	Running RunningDomain
	// Hotplug is the status of hotpluggable volumes (virt/storage/hotplug).
	Hotplug []virtv1.VolumeStatus
	// Claims are the claims of the VMI's PVC and DataVolume volumes, by
	// volume name, as the handler read them when it took the guest on.
	// They are reported in each volume's status, where the
	// LiveMigratable condition (and KubeVirt's tools) read their access
	// modes; a volume with none here keeps what its status reported.
	Claims map[string]*virtv1.PersistentVolumeClaimInfo
	// Agent is what the guest's agent last said; nil before it was asked.
	Agent *AgentFacts
	// Frozen: the handler froze the guest's file systems.
	Frozen bool
	// Sizes are the sizes in bytes of the claims' disk images, by volume
	// name, as the guest was started with them: volumeStatus' size, which
	// the target of a migration that copies a claim reads to make an image
	// of the same size.
	Sizes map[string]int64
	// MemoryHotplugFailed is why the hypervisor refused the memory
	// hotplug the spec asks for; the HotMemoryChange condition turns False
	// with it, and the VM controller asks for a restart.
	MemoryHotplugFailed string
}

// RunningDomain are facts of a running domain's document that KubeVirt
// reports in the VMI's status.
type RunningDomain struct {
	// Machine is the machine type QEMU runs, expanded ("pc-q35-7.2").
	Machine string
	// Topology is the guest's CPU topology.
	Topology *virtv1.CPUTopology
	// MemoryBytes is the guest's current memory: for a domain with a
	// virtio-mem device, its boot memory and what the device asks the
	// guest to take.
	MemoryBytes int64
	// VCPUs are the vCPUs online, MaxVCPUs those the domain can have
	// (spec.domain.cpu.maxSockets).
	VCPUs, MaxVCPUs uint
	// BootMemoryBytes is the memory the domain booted with, and
	// PluggableBytes and PluggedBytes the size and the requested size of
	// its virtio-mem device (spec.domain.memory.maxGuest): zero without
	// one.
	BootMemoryBytes, PluggableBytes, PluggedBytes int64
	// Targets maps a volume's name to its disk's guest device ("vda").
	Targets map[string]string
	// Empty maps the name of each CD-ROM drive without media to its guest
	// device: a drive whose volume is absent, or hotplugged and not
	// inserted yet (or ejected).
	Empty map[string]string
}

// Ending is how a guest ended when the domain cannot tell any more: the
// launcher's result, or a launcher that vanished.
type Ending struct {
	Phase   virtv1.VirtualMachineInstancePhase
	Reason  string
	Message string
}

// Status returns the status vmi should have given f, at now. It starts from
// vmi's own status, so fields other components own (activePods, qosClass,
// nodeName, ...) stay, and keeps the transition time of every condition whose
// status did not change: the same VMI and facts always give an equal status,
// and the handler writes only a status that differs.
func Status(vmi *virtv1.VirtualMachineInstance, f Facts, now time.Time) virtv1.VirtualMachineInstanceStatus {
	st := *vmi.Status.DeepCopy()
	t := metav1.NewTime(now.Truncate(time.Second)) // what the apiserver keeps
	e := f.Ending
	if e == nil {
		e = DomainEnding(vmi, f.Domain)
	}
	if e != nil {
		end(&st, *e, t)
		return st
	}
	ds := domain.Status(vmi, f.Domain)
	vmictl.SetPhase(&st, ds.Phase, t)
	if ds.Phase != virtv1.Running {
		return st
	}
	st.Reason = ""
	conditions.VMI().Remove(&st.Conditions, virtv1.VirtualMachineInstanceSynchronized)
	paused := false
	for _, c := range ds.Conditions {
		conditions.VMI().Set(&st.Conditions, c, t)
		paused = paused || c.Type == virtv1.VirtualMachineInstancePaused
	}
	if !paused {
		conditions.VMI().Remove(&st.Conditions, virtv1.VirtualMachineInstancePaused)
	}
	st.VolumeStatus = volumeStatus(vmi, f.Running.Targets, f.Hotplug, f.Claims, f.Sizes)
	// Migratable as the volumes are now reported.
	reported := *vmi
	reported.Status.VolumeStatus = st.VolumeStatus
	conditions.VMI().Set(&st.Conditions, liveMigratable(&reported), t)
	st.MigrationMethod = migrationMethod(vmi)
	st.MigrationTransport = virtv1.MigrationTransportUnix
	st.Interfaces = interfaces(vmi, f.Network)
	agentStatus(&st, vmi, f.Agent, f.Frozen, t)
	if f.Running.Machine != "" {
		st.Machine = &virtv1.Machine{Type: f.Running.Machine}
	}
	if f.Running.Topology != nil {
		st.CurrentCPUTopology = f.Running.Topology.DeepCopy()
	}
	st.Memory = memoryStatus(vmi, f.Running)
	if f.MemoryHotplugFailed != "" {
		conditions.VMI().Set(&st.Conditions, virtv1.VirtualMachineInstanceCondition{Type: virtv1.VirtualMachineInstanceMemoryChange,
			Status: k8sv1.ConditionFalse, Reason: ReasonMemoryHotplugFailed, Message: f.MemoryHotplugFailed}, t)
	}
	return st
}

// DomainEnding is how vmi ends given its domain's state (nil: no domain),
// or nil while the domain does not end it (see domain.Status).
func DomainEnding(vmi *virtv1.VirtualMachineInstance, ds *domain.DomainState) *Ending {
	phase := domain.Status(vmi, ds).Phase
	if !final(phase) || phase == vmi.Status.Phase {
		return nil
	}
	if phase == virtv1.Succeeded {
		return &Ending{Phase: phase, Message: "the guest shut down"}
	}
	reason, message := failure(ds)
	return &Ending{Phase: phase, Reason: reason, Message: message}
}

// end sets a final phase: Ready false with why, Paused gone.
func end(st *virtv1.VirtualMachineInstanceStatus, e Ending, t metav1.Time) {
	vmictl.SetPhase(st, e.Phase, t)
	st.Reason = ""
	if e.Phase == virtv1.Failed {
		st.Reason = e.Reason
	}
	ready := virtv1.VirtualMachineInstanceCondition{
		Type:    virtv1.VirtualMachineInstanceReady,
		Status:  k8sv1.ConditionFalse,
		Reason:  virtv1.GuestNotRunningReason,
		Message: "Guest VM is not reported as running",
	}
	if e.Reason != "" {
		ready.Reason = e.Reason
	}
	if e.Message != "" {
		ready.Message = e.Message
	}
	conditions.VMI().Set(&st.Conditions, ready, t)
	conditions.VMI().Remove(&st.Conditions, virtv1.VirtualMachineInstancePaused)
}

// failure names why a domain's state is a failure, in the words the VMI
// controller uses for the launcher's exit codes.
func failure(ds *domain.DomainState) (reason, message string) {
	switch {
	case ds == nil:
		return ReasonDomainNotFound, "the guest's domain is gone from the launcher's libvirt"
	case ds.State == domain.StateCrashed && ds.Reason == domain.ReasonCrashedPanicked:
		return ReasonGuestCrashed, "the guest panicked"
	case ds.State == domain.StateShutoff && ds.Reason == domain.ReasonShutoffCrashed:
		return ReasonGuestCrashed, "QEMU ended unexpectedly or the guest crashed (domain shut off, reason crashed)"
	case ds.State == domain.StateShutoff && ds.Reason == domain.ReasonShutoffDestroyed:
		return ReasonGuestDestroyed, "the domain was powered off at once (destroyed) instead of shutting down"
	case ds.State == domain.StatePaused && ds.Reason == domain.ReasonPausedPostcopyFailed:
		return "PostcopyFailed", "a post-copy migration failed: the guest's memory is split between two hosts"
	}
	return "Guest" + domain.ReasonString(ds.State, ds.Reason), "domain " + ds.State.String() + " (" + domain.ReasonString(ds.State, ds.Reason) + ")"
}

// interfaces reports each planned interface in spec order: the guest's MAC,
// and the addresses the guest is reached at, which are the pod's for both
// bindings (masquerade forwards them; bridge hands them to the guest). The
// guest's own name for the NIC comes from its agent (agentStatus).
func interfaces(vmi *virtv1.VirtualMachineInstance, plan network.Plan) []virtv1.VirtualMachineInstanceNetworkInterface {
	var out []virtv1.VirtualMachineInstanceNetworkInterface
	for _, iface := range vmi.Spec.Domain.Devices.Interfaces {
		p, ok := plan[iface.Name]
		if !ok {
			continue
		}
		s := virtv1.VirtualMachineInstanceNetworkInterface{
			Name:             iface.Name,
			MAC:              p.MAC,
			PodInterfaceName: p.Pod.Name,
			InfoSource:       InfoSourceDomain,
			QueueCount:       1,
		}
		if p.Queues > 1 {
			s.QueueCount = int32(p.Queues)
		}
		for _, cidr := range p.Pod.IPs {
			if pfx, err := netip.ParsePrefix(cidr); err == nil {
				s.IPs = append(s.IPs, pfx.Addr().String())
			} else {
				s.IPs = append(s.IPs, strings.SplitN(cidr, "/", 2)[0])
			}
		}
		if len(s.IPs) > 0 {
			s.IP = s.IPs[0]
		}
		out = append(out, s)
	}
	return out
}

// volumeStatus lists every volume a disk uses, in spec order, with its guest
// device and, for a claim, what claims holds of it (else what the status
// said) and its image's size; hotpluggable volumes carry their hotplug
// phase, and those that left the spec follow while they are let go
// (Detaching).
func volumeStatus(vmi *virtv1.VirtualMachineInstance, targets map[string]string, hot []virtv1.VolumeStatus, claims map[string]*virtv1.PersistentVolumeClaimInfo, sizes map[string]int64) []virtv1.VolumeStatus {
	reported := map[string]*virtv1.PersistentVolumeClaimInfo{}
	for _, vs := range vmi.Status.VolumeStatus {
		reported[vs.Name] = vs.PersistentVolumeClaimInfo
	}
	disks := map[string]bool{}
	for _, d := range vmi.Spec.Domain.Devices.Disks {
		disks[d.Name] = true
	}
	hotBy := map[string]virtv1.VolumeStatus{}
	for _, h := range hot {
		hotBy[h.Name] = h
	}
	var out []virtv1.VolumeStatus
	for _, v := range vmi.Spec.Volumes {
		if h, ok := hotBy[v.Name]; ok {
			out = append(out, h)
			continue
		}
		if !disks[v.Name] || spec.Hotpluggable(&v) {
			continue
		}
		claim := claims[v.Name]
		if claim == nil {
			claim = reported[v.Name]
		}
		out = append(out, virtv1.VolumeStatus{Name: v.Name, Target: targets[v.Name], PersistentVolumeClaimInfo: claim.DeepCopy(), Size: sizes[v.Name]})
	}
	// Hotplugged volumes that left the spec and are still being let go.
	for _, h := range hot {
		if !slices.ContainsFunc(vmi.Spec.Volumes, func(v virtv1.Volume) bool { return v.Name == h.Name }) {
			out = append(out, h)
		}
	}
	// The backend-storage claim, which the VMI controller reports.
	for _, vs := range vmi.Status.VolumeStatus {
		if vs.Name == backendstorage.VolumeName {
			out = append(out, *vs.DeepCopy())
		}
	}
	return out
}

// memoryStatus reports the guest's memory at boot, now and requested, as
// KubeVirt's handler does: the boot memory stays what it was first
// reported; for a domain with a virtio-mem device (spec.domain.memory.
// maxGuest) the requested memory is the boot memory and what the device
// asks the guest to take, which the guest takes at once.
func memoryStatus(vmi *virtv1.VirtualMachineInstance, rd RunningDomain) *virtv1.MemoryStatus {
	var guest *resource.Quantity
	if m := vmi.Spec.Domain.Memory; m != nil && m.Guest != nil {
		q := m.Guest.DeepCopy()
		guest = &q
	} else if q, ok := vmi.Spec.Domain.Resources.Requests[k8sv1.ResourceMemory]; ok {
		q = q.DeepCopy()
		guest = &q
	}
	current := rd.MemoryBytes
	if guest == nil && current == 0 {
		return nil
	}
	ms := &virtv1.MemoryStatus{GuestAtBoot: guest, GuestRequested: guest}
	if current > 0 {
		ms.GuestCurrent = resource.NewQuantity(current, resource.BinarySI)
	} else {
		ms.GuestCurrent = guest
	}
	if guest == nil {
		ms.GuestAtBoot, ms.GuestRequested = ms.GuestCurrent, ms.GuestCurrent
	}
	if rd.PluggableBytes > 0 {
		ms.GuestAtBoot = resource.NewQuantity(rd.BootMemoryBytes, resource.BinarySI)
		ms.GuestRequested = ms.GuestCurrent
	}
	if old := vmi.Status.Memory; old != nil && old.GuestAtBoot != nil {
		q := old.GuestAtBoot.DeepCopy()
		ms.GuestAtBoot = &q
	}
	return ms
}

func final(p virtv1.VirtualMachineInstancePhase) bool {
	return p == virtv1.Succeeded || p == virtv1.Failed
}
