package replicaset

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/controllers/conditions"
	"github.com/virtkit/virtkit/virt/spec"
)

// DefaultBurst is how many VMIs one reconcile creates or deletes at most:
// KubeVirt's default burst of replicas.
const DefaultBurst = 250

// Plan is what one reconcile does to a replica set's VMIs, as plain data:
// each list holds VMI names.
type Plan struct {
	// Adopt are orphans the selector matches: the replica set becomes their
	// controller.
	Adopt []string
	// Release are VMIs the replica set controls whose labels no longer match
	// its selector: it stops controlling them and leaves them running.
	Release []string
	// Create is how many VMIs of the template to create.
	Create int
	// Delete are active VMIs beyond spec.replicas, in DeletionOrder.
	Delete []string
	// Clean are finished VMIs (Succeeded, Failed, or lost with their pod)
	// the replica set controls: deleted, they make room for replacements.
	Clean []string
	// Replicas and ReadyReplicas count the active VMIs it controls, and of
	// those the ones whose Ready condition is True, before this plan runs.
	Replicas, ReadyReplicas int32
}

// Scales reports whether the plan creates or deletes any VMI.
func (p Plan) Scales() bool { return p.Create > 0 || len(p.Delete) > 0 || len(p.Clean) > 0 }

// Selector returns rs's selector, checked as the controller needs it
// (spec.TemplateSelector). The webhook refuses such replica sets; one
// stored past it is reported, never acted on.
func Selector(rs *virtv1.VirtualMachineInstanceReplicaSet) (labels.Selector, error) {
	if rs.Spec.Template == nil {
		return nil, field.Required(field.NewPath("spec", "template"), "a VirtualMachineInstanceReplicaSet needs a template")
	}
	s, errs := spec.TemplateSelector(field.NewPath("spec", "selector"), rs.Spec.Selector, rs.Spec.Template.ObjectMeta.Labels)
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return s, nil
}

// PlanFor decides what to do with rs's VMIs given every VMI of its
// namespace. It creates or deletes at most burst VMIs (DefaultBurst when
// burst is not positive), and none while rs is paused or being deleted; a
// replica set being deleted adopts nothing. It fails only on a selector
// Selector refuses.
func PlanFor(rs *virtv1.VirtualMachineInstanceReplicaSet, vmis []virtv1.VirtualMachineInstance, burst int) (Plan, error) {
	sel, err := Selector(rs)
	if err != nil {
		return Plan{}, err
	}
	if burst <= 0 {
		burst = DefaultBurst
	}
	var p Plan
	var active []*virtv1.VirtualMachineInstance
	for i := range vmis {
		vmi := &vmis[i]
		matches := sel.Matches(labels.Set(vmi.Labels))
		ref := metav1.GetControllerOfNoCopy(vmi)
		switch {
		case ref == nil:
			if !matches || vmi.DeletionTimestamp != nil || rs.DeletionTimestamp != nil || vmi.IsFinal() {
				continue
			}
			p.Adopt = append(p.Adopt, vmi.Name)
		case ref.UID != rs.UID:
			continue
		case !matches:
			if vmi.DeletionTimestamp == nil {
				p.Release = append(p.Release, vmi.Name)
			}
			continue
		}
		switch {
		case vmi.DeletionTimestamp != nil:
		case vmi.IsFinal() || lost(vmi):
			p.Clean = append(p.Clean, vmi.Name)
		default:
			active = append(active, vmi)
			if ready(vmi) {
				p.ReadyReplicas++
			}
		}
	}
	p.Replicas = int32(len(active))
	if rs.Spec.Paused || rs.DeletionTimestamp != nil {
		p.Clean = nil
		return p, nil
	}
	switch diff := len(active) - int(Replicas(rs)); {
	case diff < 0:
		p.Create = min(-diff, burst)
	case diff > 0:
		for _, vmi := range DeletionOrder(active)[:min(diff, burst)] {
			p.Delete = append(p.Delete, vmi.Name)
		}
	}
	return p, nil
}

// Replicas is rs's wanted count: spec.replicas, 1 when unset.
func Replicas(rs *virtv1.VirtualMachineInstanceReplicaSet) int32 {
	if rs.Spec.Replicas == nil {
		return 1
	}
	return *rs.Spec.Replicas
}

// ready reports whether vmi's Ready condition is True.
func ready(vmi *virtv1.VirtualMachineInstance) bool {
	c := conditions.VMI().Find(vmi.Status.Conditions, virtv1.VirtualMachineInstanceReady)
	return c != nil && c.Status == corev1.ConditionTrue
}

// lost reports whether vmi's pod is going away without the VMI having
// finished (its node was lost): KubeVirt counts such a VMI as gone.
func lost(vmi *virtv1.VirtualMachineInstance) bool {
	c := conditions.VMI().Find(vmi.Status.Conditions, virtv1.VirtualMachineInstanceReady)
	return c != nil && c.Status == corev1.ConditionFalse && c.Reason == virtv1.PodTerminatingReason
}
