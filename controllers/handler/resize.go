package handler

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	vmictl "github.com/virtkit/virtkit/controllers/vmi"
	"github.com/virtkit/virtkit/virt/domain"
)

// Events of a hotplug of vCPUs and memory.
const (
	ReasonVCPUsHotplugged    = "VCPUsHotplugged"
	ReasonVCPUsHotplugFailed = "VCPUsHotplugFailed"
	ReasonMemoryHotplugged   = "MemoryHotplugged"
	// ReasonMemoryHotplugError is the Warning event of a memory hotplug
	// that failed for a reason the next report may not have.
	ReasonMemoryHotplugError = "MemoryHotplugFailed"
	// ReasonMemoryHotplugFailed is KubeVirt's reason of a HotMemoryChange
	// condition turned False.
	ReasonMemoryHotplugFailed = "Memory Hotplug Failed"
)

// Resize is what to hot-plug into a running guest so that it has what its
// VMI's spec asks for (KubeVirt's LiveUpdate of CPU sockets and guest
// memory).
type Resize struct {
	// VCPUs is the number of vCPUs to have online; zero: leave them.
	VCPUs uint
	// Plug is the size to ask of the virtio-mem device, in bytes; nil:
	// leave it.
	Plug *int64
}

// Sized is what a launcher pod was sized for (vmictl.SizedFor): vCPUs and
// guest memory in bytes.
type Sized struct{ VCPUs, Memory int64 }

// PlanResize decides what to hot-plug into vmi's running domain, whose
// document gave rd, within what its launcher pod was sized for, as
// KubeVirt's handler does after the migration that moved the guest to such
// a pod: vCPUs only grow (fewer sockets need a restart, which the VM
// controller says), up to the domain's maximum; the virtio-mem device asks
// for the spec's guest memory less the boot memory. Nothing while a
// migration runs or the VMI is not Running.
func PlanResize(vmi *virtv1.VirtualMachineInstance, rd RunningDomain, sized Sized) Resize {
	var r Resize
	if vmi.Status.Phase != virtv1.Running || vmi.DeletionTimestamp != nil {
		return r
	}
	if vmictl.MigrationUnderway(vmi) {
		return r
	}
	d := vmi.Spec.Domain
	if d.CPU != nil && d.CPU.MaxSockets > 0 {
		want := vmictl.VCPUs(vmi)
		if want > int64(rd.VCPUs) && want <= int64(rd.MaxVCPUs) && want <= sized.VCPUs {
			r.VCPUs = uint(want)
		}
	}
	if d.Memory != nil && d.Memory.Guest != nil && rd.PluggableBytes > 0 {
		want := d.Memory.Guest.Value() - rd.BootMemoryBytes
		if want >= 0 && want != rd.PluggedBytes && d.Memory.Guest.Value() <= sized.Memory {
			r.Plug = &want
		}
	}
	return r
}

// wantsResize reports whether vmi's spec asks for more than rd has,
// before what its pod was sized for is known.
func wantsResize(vmi *virtv1.VirtualMachineInstance, rd RunningDomain) bool {
	p := PlanResize(vmi, rd, Sized{VCPUs: 1 << 31, Memory: 1 << 62})
	return p.VCPUs > 0 || p.Plug != nil
}

// resize hot-plugs what PlanResize decides into g's domain. It reports
// whether the domain changed, and the message of a memory hotplug the
// hypervisor refused as invalid (the HotMemoryChange condition turns
// False with it). Other failures are logged and recorded as Warning
// events, not returned: the VMI's status is reported all the same, and
// the next report tries again.
func (r *Reconciler) resize(ctx context.Context, vmi *virtv1.VirtualMachineInstance, g *guest, rd RunningDomain) (changed bool, memoryFailed string, err error) {
	if !wantsResize(vmi, rd) {
		return false, "", nil
	}
	sized, err := r.podSized(ctx, vmi, g)
	if err != nil {
		return false, "", err
	}
	plan := PlanResize(vmi, rd, sized)
	if plan.VCPUs == 0 && plan.Plug == nil {
		return false, "", nil // the pod is too small: a migration comes first
	}
	rs, ok := g.dom.(domain.Resizer)
	if !ok {
		return false, "", fmt.Errorf("handler: VMI %s: the launcher's domain Manager cannot hot-plug vCPUs or memory (not a domain.Resizer)", g.key)
	}
	log := logf.FromContext(ctx)
	if plan.VCPUs > 0 {
		// A refusal is said, not returned: the status still goes out, and
		// the next report tries again.
		if err := rs.SetVCPUs(ctx, g.domain, plan.VCPUs); err != nil {
			log.Error(err, "hot-plugging vCPUs", "vcpus", plan.VCPUs)
			r.recorder.Eventf(vmi, corev1.EventTypeWarning, ReasonVCPUsHotplugFailed, "hot-plugging vCPUs to %d: %v", plan.VCPUs, err)
		} else {
			changed = true
			log.Info("vCPUs hot-plugged", "vcpus", plan.VCPUs, "was", rd.VCPUs)
			r.recorder.Eventf(vmi, corev1.EventTypeNormal, ReasonVCPUsHotplugged, "%d vCPUs online, as spec.domain.cpu asks", plan.VCPUs)
		}
	}
	if plan.Plug != nil {
		err := rs.SetPluggedMemory(ctx, g.domain, uint64(*plan.Plug))
		switch {
		case errors.Is(err, domain.ErrInvalidSpec):
			// KubeVirt's words: the VM controller then asks for a restart.
			return changed, "memory hotplug failed, the VM configuration is not supported", nil
		case err != nil:
			log.Error(err, "hot-plugging memory", "pluggedBytes", *plan.Plug)
			r.recorder.Eventf(vmi, corev1.EventTypeWarning, ReasonMemoryHotplugError, "hot-plugging memory to %s: %v", vmi.Spec.Domain.Memory.Guest.String(), err)
			return changed, "", nil
		}
		changed = true
		log.Info("memory hot-plugged", "pluggedBytes", *plan.Plug, "was", rd.PluggedBytes)
		r.recorder.Eventf(vmi, corev1.EventTypeNormal, ReasonMemoryHotplugged, "guest memory %s, as spec.domain.memory.guest asks", vmi.Spec.Domain.Memory.Guest.String())
	}
	return changed, "", nil
}

// podSized reads what g's launcher pod was sized for.
func (r *Reconciler) podSized(ctx context.Context, vmi *virtv1.VirtualMachineInstance, g *guest) (Sized, error) {
	var pods corev1.PodList
	if err := r.reader.List(ctx, &pods, client.InNamespace(vmi.Namespace), client.MatchingLabels{virtv1.CreatedByLabel: string(vmi.UID)}); err != nil {
		return Sized{}, fmt.Errorf("handler: VMI %s: listing its launcher pods: %w", g.key, err)
	}
	for i := range pods.Items {
		if p := &pods.Items[i]; p.UID == g.podUID {
			v, m := vmictl.SizedFor(p)
			return Sized{VCPUs: v, Memory: m}, nil
		}
	}
	return Sized{}, nil // not in the cache yet: nothing is plugged
}
