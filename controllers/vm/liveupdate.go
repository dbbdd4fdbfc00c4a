package vm

import (
	"context"
	"fmt"

	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/controllers/conditions"
	vmictl "github.com/virtkit/virtkit/controllers/vmi"
)

// Rollout is how template changes reach a running VMI: the KubeVirt CR's
// spec.configuration.vmRolloutStrategy and the CPU allocation ratio that
// sizes a VMI's CPU request.
type Rollout struct {
	// LiveUpdate is vmRolloutStrategy LiveUpdate (KubeVirt's default):
	// CPU sockets, guest memory, node selector, affinity and tolerations
	// reach the running VMI. Otherwise (Stage) every change waits for a
	// restart.
	LiveUpdate bool
	// CPUAllocationRatio is vCPUs per requested CPU
	// (developerConfiguration.cpuAllocationRatio); 0 means 10.
	CPUAllocationRatio int
}

// KubeVirt's RestartRequired messages for template changes LiveUpdate
// cannot apply.
const (
	MessageSocketsPastMax      = "CPU sockets updated in template spec to a value higher than what's available"
	MessageSocketsReduced      = "Reduction of CPU socket count requires a restart"
	MessageMemoryHotplugFailed = "memory updated in template spec. Memory-hotplug failed and is not available for this VM configuration"
	MessageMemoryNotMigratable = "memory updated in template spec. Memory-hotplug is only available for migratable VMs"
	MessageMemoryNoMaxGuest    = "memory updated in template spec. Memory-hotplug is not available for this VM configuration"
	MessageMemoryBelowBoot     = "memory updated in template spec to a value lower than what the VM started with"
	MessageMemoryPastMax       = "memory updated in template spec to a value higher than what's available"
)

// LiveUpdate is what a running VMI takes of its VM's template now.
type LiveUpdate struct {
	// Spec is the VMI's spec with the template's live changes applied;
	// nil when there are none to make now.
	Spec *virtv1.VirtualMachineInstanceSpec
	// Restart is KubeVirt's RestartRequired message for a change the VMI
	// cannot take live; empty when none.
	Restart string
}

// PlanLiveUpdate decides, as KubeVirt's VM controller does, what of tmpl
// (the VM's template spec) a running vmi takes live under ro:
//   - CPU sockets grow up to the VMI's maxSockets (the VMI's CPU requests
//     and limits, when the template sets them, grow with them); fewer
//     sockets, or more than maxSockets, need a restart;
//   - guest memory changes within maxGuest, not below the memory the guest
//     booted with, for a migratable VMI (the VMI's memory request, and its
//     limit when the template sets one, move with it);
//   - the node selector, affinity and tolerations are carried over.
//
// Nothing changes while a migration runs or a hotplug is under way (the
// VMI's HotVCPUChange or True HotMemoryChange condition): the VMI's own
// change brings the VM back. Under the Stage strategy any of these changes
// needs a restart.
func PlanLiveUpdate(tmpl *virtv1.VirtualMachineInstanceSpec, vmi *virtv1.VirtualMachineInstance, ro Rollout) LiveUpdate {
	cur := &vmi.Spec
	cpu, mem, placement := liveChanges(tmpl, cur)
	if !cpu && !mem && !placement {
		return LiveUpdate{}
	}
	tc, vc := tmpl.Domain.CPU, cur.Domain.CPU
	if !ro.LiveUpdate {
		return LiveUpdate{Restart: MessageRestartRequired}
	}
	if vmictl.MigrationUnderway(vmi) {
		return LiveUpdate{}
	}
	next := cur.DeepCopy()
	changed := false
	if placement {
		next.NodeSelector, next.Affinity, next.Tolerations = tmpl.NodeSelector, tmpl.Affinity, tmpl.Tolerations
		changed = true
	}
	if cpu {
		switch {
		case hasCondition(vmi, virtv1.VirtualMachineInstanceVCPUChange, ""):
			// A hotplug is under way.
		case tc.Sockets > vc.MaxSockets:
			return LiveUpdate{Restart: MessageSocketsPastMax}
		case tc.Sockets < vc.Sockets:
			return LiveUpdate{Restart: MessageSocketsReduced}
		default:
			growCPU(next, tmpl, vmi, tc.Sockets, ro.CPUAllocationRatio)
			changed = true
		}
	}
	if mem {
		tg, mg := tmpl.Domain.Memory.Guest, cur.Domain.Memory.MaxGuest
		var boot *resource.Quantity
		if m := vmi.Status.Memory; m != nil {
			boot = m.GuestAtBoot
		}
		switch {
		case hasCondition(vmi, virtv1.VirtualMachineInstanceMemoryChange, k8sv1.ConditionFalse):
			return LiveUpdate{Restart: MessageMemoryHotplugFailed}
		case !vmi.IsMigratable():
			return LiveUpdate{Restart: MessageMemoryNotMigratable}
		case mg == nil:
			return LiveUpdate{Restart: MessageMemoryNoMaxGuest}
		case hasCondition(vmi, virtv1.VirtualMachineInstanceMemoryChange, k8sv1.ConditionTrue):
			// A hotplug is under way.
		case boot != nil && tg.Cmp(*boot) < 0:
			return LiveUpdate{Restart: MessageMemoryBelowBoot}
		case tg.Cmp(*mg) > 0:
			return LiveUpdate{Restart: MessageMemoryPastMax}
		default:
			setMemory(next, tmpl, *tg)
			changed = true
		}
	}
	if !changed {
		return LiveUpdate{}
	}
	return LiveUpdate{Spec: next}
}

// liveChanges reports which live-updatable fields of tmpl differ from
// cur's: CPU sockets, guest memory, placement.
func liveChanges(tmpl, cur *virtv1.VirtualMachineInstanceSpec) (cpu, mem, placement bool) {
	tc, vc := tmpl.Domain.CPU, cur.Domain.CPU
	cpu = tc != nil && vc != nil && tc.Sockets != vc.Sockets
	var tg, vg *resource.Quantity
	if m := tmpl.Domain.Memory; m != nil {
		tg = m.Guest
	}
	if m := cur.Domain.Memory; m != nil {
		vg = m.Guest
	}
	mem = tg != nil && vg != nil && !tg.Equal(*vg)
	placement = !equality.Semantic.DeepEqual(tmpl.NodeSelector, cur.NodeSelector) ||
		!equality.Semantic.DeepEqual(tmpl.Affinity, cur.Affinity) ||
		!equality.Semantic.DeepEqual(tmpl.Tolerations, cur.Tolerations)
	return cpu, mem, placement
}

// growCPU sets next's sockets, and moves the CPU request and limit the
// template sets by what the added vCPUs ask of the node, as KubeVirt does.
func growCPU(next, tmpl *virtv1.VirtualMachineInstanceSpec, vmi *virtv1.VirtualMachineInstance, sockets uint32, ratio int) {
	before := vmictl.VCPUs(vmi)
	next.Domain.CPU.Sockets = sockets
	after := vmictl.VCPUs(&virtv1.VirtualMachineInstance{Spec: *next})
	if ratio <= 0 {
		ratio = vmictl.CPUAllocationRatio
	}
	delta := resource.NewMilliQuantity((after-before)*int64(1000/ratio), resource.DecimalSI)
	add(next.Domain.Resources.Requests, tmpl.Domain.Resources.Requests, k8sv1.ResourceCPU, *delta)
	add(next.Domain.Resources.Limits, tmpl.Domain.Resources.Limits, k8sv1.ResourceCPU, *delta)
}

// setMemory sets next's guest memory to guest, and moves the memory
// request (not below the guest memory) and the limit the template sets by
// as much, as KubeVirt does.
func setMemory(next, tmpl *virtv1.VirtualMachineInstanceSpec, guest resource.Quantity) {
	delta := guest.DeepCopy()
	delta.Sub(*next.Domain.Memory.Guest)
	next.Domain.Memory.Guest = &guest
	if q, ok := next.Domain.Resources.Requests[k8sv1.ResourceMemory]; ok && !q.IsZero() {
		q = q.DeepCopy()
		q.Add(delta)
		if q.Cmp(guest) < 0 {
			q = guest.DeepCopy()
		}
		next.Domain.Resources.Requests[k8sv1.ResourceMemory] = q
	}
	add(next.Domain.Resources.Limits, tmpl.Domain.Resources.Limits, k8sv1.ResourceMemory, delta)
}

// add adds delta to l[name] when the template's own list sets it.
func add(l, tmpl k8sv1.ResourceList, name k8sv1.ResourceName, delta resource.Quantity) {
	if t, ok := tmpl[name]; !ok || t.IsZero() || l == nil {
		return
	}
	q := l[name].DeepCopy()
	q.Add(delta)
	l[name] = q
}

// hasCondition reports whether vmi has condition t, of status s when s is
// not empty.
func hasCondition(vmi *virtv1.VirtualMachineInstance, t virtv1.VirtualMachineInstanceConditionType, s k8sv1.ConditionStatus) bool {
	c := conditions.VMI().Find(vmi.Status.Conditions, t)
	return c != nil && (s == "" || c.Status == s)
}

// syncLiveUpdate applies PlanLiveUpdate to vm's running vmi. It returns
// the RestartRequired message of a change the VMI cannot take live.
func (r *Reconciler) syncLiveUpdate(ctx context.Context, vm *virtv1.VirtualMachine, vmi *virtv1.VirtualMachineInstance) (string, *SyncError) {
	if vmi == nil || vm.Spec.Template == nil || !vmi.IsRunning() || vmi.DeletionTimestamp != nil {
		return "", nil
	}
	if cpu, mem, placement := liveChanges(&vm.Spec.Template.Spec, &vmi.Spec); !cpu && !mem && !placement {
		return "", nil // the common case: no read of the KubeVirt CR
	}
	ro, err := r.rollout(ctx)
	if err != nil {
		return "", &SyncError{Reason: ReasonLiveUpdate, Err: fmt.Errorf("reading the rollout strategy: %w", err)}
	}
	lu := PlanLiveUpdate(&vm.Spec.Template.Spec, vmi, ro)
	if lu.Spec == nil {
		return lu.Restart, nil
	}
	written, err := r.updateVMISpec(ctx, vmi, func(s *virtv1.VirtualMachineInstanceSpec) { *s = *lu.Spec })
	if err != nil {
		return lu.Restart, &SyncError{Reason: ReasonLiveUpdate, Err: fmt.Errorf("updating VirtualMachineInstance %s/%s as the template's live-updatable fields: %w", vmi.Namespace, vmi.Name, err)}
	}
	if written {
		r.recorder.Eventf(vm, k8sv1.EventTypeNormal, ReasonLiveUpdate, "Updated virtual machine instance %s live as the template's CPU, memory and placement", vmi.Name)
	}
	return lu.Restart, nil
}

// liveRestartRequired sets the RestartRequired condition with msg, the
// message of a template change LiveUpdate could not apply, unless a
// restart is asked for already. A condition prev (the VM's conditions
// before this reconcile) had True is kept as it was, its time with it.
func liveRestartRequired(st *virtv1.VirtualMachineStatus, prev []virtv1.VirtualMachineCondition, msg string, ts metav1.Time) {
	if msg == "" {
		return
	}
	if c := conditions.VM().Find(st.Conditions, virtv1.VirtualMachineRestartRequired); c != nil && c.Status == k8sv1.ConditionTrue {
		return
	}
	if c := conditions.VM().Find(prev, virtv1.VirtualMachineRestartRequired); c != nil && c.Status == k8sv1.ConditionTrue && c.Message == msg {
		st.Conditions = append(st.Conditions, *c.DeepCopy())
		return
	}
	conditions.VM().Set(&st.Conditions, virtv1.VirtualMachineCondition{Type: virtv1.VirtualMachineRestartRequired,
		Status: k8sv1.ConditionTrue, Message: msg}, ts)
}
