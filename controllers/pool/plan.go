package pool

import (
	"fmt"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	virtv1 "kubevirt.io/api/core/v1"
	poolv1 "kubevirt.io/api/pool/v1beta1"

	"github.com/virtkit/virtkit/controllers/conditions"
	"github.com/virtkit/virtkit/virt/spec"
)

// DefaultBurst is how many VMs one reconcile creates or deletes at most:
// KubeVirt's default burst of replicas.
const DefaultBurst = 250

// Revisions are the pool specs a pool's revisions hold, by revision name.
type Revisions map[string]*poolv1.VirtualMachinePoolSpec

// RevisionName names the revision of pool's current spec: NAME-GENERATION,
// as KubeVirt names it.
func RevisionName(pool *poolv1.VirtualMachinePool) string {
	return pool.Name + "-" + strconv.FormatInt(pool.Generation, 10)
}

// Plan is what one reconcile does, as plain data; lists hold object names.
type Plan struct {
	// Release are VMs the pool controls whose labels no longer match its
	// selector: it stops controlling them.
	Release []string
	// Unfinalize are VMs of the pool, being deleted (or all of them when
	// the pool is), that still carry the pool's finalizer.
	Unfinalize []string
	// Create are the indices of the VMs to create.
	Create []int
	// Delete are VMs to delete: scaled in, or whose dataVolumeTemplates
	// changed (a VM cannot change them in place).
	Delete []string
	// Update are VMs to rewrite from the pool's current template.
	Update []string
	// Restart are VMIs to delete so that their VM starts them again from
	// its updated spec; Relabel those whose template did not change but
	// whose revision did: they only take the VM's revision label.
	Restart, Relabel []string
	// Prune are revisions no VM or VMI names any more.
	Prune []string
	// Retry is set when maxUnavailable held updates back.
	Retry bool
	// Replicas and ReadyReplicas count the VMs of the pool, and of those
	// the ones whose Ready condition is True.
	Replicas, ReadyReplicas int32
}

// NeedsRevision reports whether the plan makes or rewrites VMs from the
// current revision, which must then be stored.
func (p Plan) NeedsRevision() bool { return len(p.Create) > 0 || len(p.Update) > 0 }

// Scales reports whether the plan creates or deletes VMs.
func (p Plan) Scales() bool { return len(p.Create) > 0 || len(p.Delete) > 0 }

// Selector returns pool's selector, checked as the controller needs it
// (spec.TemplateSelector).
func Selector(pool *poolv1.VirtualMachinePool) (labels.Selector, error) {
	t := pool.Spec.VirtualMachineTemplate
	if t == nil {
		return nil, field.Required(field.NewPath("spec", "virtualMachineTemplate"), "a VirtualMachinePool needs a template of its VirtualMachines")
	}
	s, errs := spec.TemplateSelector(field.NewPath("spec", "selector"), pool.Spec.Selector, t.ObjectMeta.Labels)
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return s, nil
}

// Facts is what PlanFor decides from.
type Facts struct {
	Pool *poolv1.VirtualMachinePool
	// VMs are every VM of the pool's namespace: those of other owners
	// hold names the pool cannot take.
	VMs []virtv1.VirtualMachine
	// VMIs are the VMIs of the namespace by name (a VM's VMI has its name).
	VMIs map[string]*virtv1.VirtualMachineInstance
	// Revisions are the pool's revisions, the current one included.
	Revisions Revisions
	// Burst bounds creations and deletions (DefaultBurst when not
	// positive); Shuffle orders the Random sort policy.
	Burst   int
	Shuffle Shuffle
}

// PlanFor decides one reconcile of a pool from f, as KubeVirt's pool
// controller: release detached VMs, then scale; once the count is right,
// update; once nothing is outdated, prune revisions. A paused pool only
// counts and releases; a pool being deleted releases its VMs' finalizers.
func PlanFor(f Facts) (Plan, error) {
	pool := f.Pool
	sel, err := Selector(pool)
	if err != nil {
		return Plan{}, err
	}
	var p Plan
	var mine []*virtv1.VirtualMachine
	taken := map[string]bool{}
	deleting := 0
	for i := range f.VMs {
		vm := &f.VMs[i]
		taken[vm.Name] = true
		if ref := metav1.GetControllerOfNoCopy(vm); ref == nil || ref.UID != pool.UID {
			continue
		}
		if !sel.Matches(labels.Set(vm.Labels)) {
			if vm.DeletionTimestamp == nil {
				p.Release = append(p.Release, vm.Name)
			}
			continue
		}
		mine = append(mine, vm)
		if vm.DeletionTimestamp != nil || pool.DeletionTimestamp != nil {
			if vm.DeletionTimestamp != nil {
				deleting++
			}
			if hasFinalizer(vm) {
				p.Unfinalize = append(p.Unfinalize, vm.Name)
			}
		}
		if vmReady(vm) {
			p.ReadyReplicas++
		}
	}
	p.Replicas = int32(len(mine))
	if pool.Spec.Paused || pool.DeletionTimestamp != nil {
		return p, nil
	}
	burst := f.Burst
	if burst <= 0 {
		burst = DefaultBurst
	}
	switch diff := len(mine) - int(replicas(pool)); {
	case diff < 0:
		for i := 0; len(p.Create) < min(-diff, burst); i++ {
			if !taken[spec.PoolVMName(pool.Name, i)] {
				p.Create = append(p.Create, i)
			}
		}
		return p, nil
	case diff > 0:
		p.Delete = scaleIn(pool, mine, min(diff, burst)-deleting, f.Shuffle)
		return p, nil
	}
	if u := pool.Spec.UpdateStrategy; u == nil || u.Unmanaged == nil {
		if err := planUpdate(&p, f, mine); err != nil {
			return p, err
		}
	}
	if len(p.Update) == 0 && len(p.Delete) == 0 {
		p.Prune = unused(f, mine)
	}
	return p, nil
}

// scaleIn picks count VMs to delete, as the scale-in strategy says: none
// for Unmanaged and Opportunistic (VMs go only when someone deletes them),
// otherwise by the proactive selection policy.
func scaleIn(pool *poolv1.VirtualMachinePool, mine []*virtv1.VirtualMachine, count int, shuffle Shuffle) []string {
	s := pool.Spec.ScaleInStrategy
	if count <= 0 || (s != nil && (s.Unmanaged != nil || s.Opportunistic != nil)) {
		return nil
	}
	var policy *poolv1.VirtualMachinePoolSelectionPolicy
	if s != nil && s.Proactive != nil {
		policy = s.Proactive.SelectionPolicy
	}
	var out []string
	for _, vm := range selected(pool, live(mine), policy, shuffle) {
		if len(out) == count {
			break
		}
		out = append(out, vm.Name)
	}
	return out
}

// selected sorts vms by policy and keeps those its label selector matches.
func selected(pool *poolv1.VirtualMachinePool, vms []*virtv1.VirtualMachine, policy *poolv1.VirtualMachinePoolSelectionPolicy,
	shuffle Shuffle) []*virtv1.VirtualMachine {
	var sort *poolv1.VirtualMachinePoolSortPolicy
	if policy != nil {
		sort = policy.SortPolicy
	}
	Order(pool.Name, vms, sort, shuffle)
	if policy == nil || policy.Selectors == nil || policy.Selectors.LabelSelector == nil {
		return vms
	}
	s, err := metav1.LabelSelectorAsSelector(policy.Selectors.LabelSelector)
	if err != nil {
		return nil
	}
	var out []*virtv1.VirtualMachine
	for _, vm := range vms {
		if s.Matches(labels.Set(vm.Labels)) {
			out = append(out, vm)
		}
	}
	return out
}

// planUpdate rewrites outdated VMs, and under the proactive strategy
// restarts the VMIs of up-to-date VMs that run an older template, at most
// maxUnavailable unavailable at once (VMs that are not ready are handled
// first and not counted, as KubeVirt).
func planUpdate(p *Plan, f Facts, mine []*virtv1.VirtualMachine) error {
	pool := f.Pool
	var policy *poolv1.VirtualMachinePoolSelectionPolicy
	if u := pool.Spec.UpdateStrategy; u != nil && u.Proactive != nil {
		policy = u.Proactive.SelectionPolicy
	}
	candidates := live(mine)
	if policy != nil && policy.Selectors != nil && policy.Selectors.LabelSelector != nil {
		candidates = selected(pool, candidates, &poolv1.VirtualMachinePoolSelectionPolicy{Selectors: policy.Selectors}, func([]*virtv1.VirtualMachine) {})
	}
	var current []*virtv1.VirtualMachine
	for _, vm := range candidates {
		if outdatedVM(pool, vm, f.Revisions) {
			if _, ok := spec.PoolIndex(pool.Name, vm.Name); ok {
				p.Update = append(p.Update, vm.Name)
			}
			continue
		}
		current = append(current, vm)
	}
	if u := pool.Spec.UpdateStrategy; u != nil && u.Opportunistic != nil {
		return nil
	}
	act := func(vm *virtv1.VirtualMachine, vmi *virtv1.VirtualMachineInstance) bool {
		switch outdatedVMI(vm, vmi, f.Revisions) {
		case updateRestart:
			p.Restart = append(p.Restart, vmi.Name)
		case updateRelabel:
			p.Relabel = append(p.Relabel, vmi.Name)
		case updateDelete:
			p.Delete = append(p.Delete, vm.Name)
		default:
			return false
		}
		return true
	}
	handled := map[string]bool{}
	for _, vm := range current {
		if vmi := f.VMIs[vm.Name]; vmi != nil && vmi.DeletionTimestamp == nil && !vmReady(vm) {
			handled[vm.Name] = act(vm, vmi)
		}
	}
	budget, err := spec.MaxUnavailable(pool.Spec.MaxUnavailable, replicas(pool))
	if err != nil {
		return fmt.Errorf("spec.maxUnavailable: %w", err)
	}
	for _, vm := range current {
		if !vmiReady(f.VMIs[vm.Name]) {
			budget--
		}
	}
	var sort *poolv1.VirtualMachinePoolSortPolicy
	if policy != nil {
		sort = policy.SortPolicy
	}
	Order(pool.Name, current, sort, f.Shuffle)
	for _, vm := range current {
		vmi := f.VMIs[vm.Name]
		if handled[vm.Name] || vmi == nil || vmi.DeletionTimestamp != nil || outdatedVMI(vm, vmi, f.Revisions) == updateNone {
			continue
		}
		if budget <= 0 {
			p.Retry = true
			return nil
		}
		act(vm, vmi)
		budget--
	}
	return nil
}

// unused lists the revisions no VM of the pool or its VMI names; the
// current one is kept.
func unused(f Facts, mine []*virtv1.VirtualMachine) []string {
	used := map[string]bool{RevisionName(f.Pool): true}
	for _, vm := range mine {
		used[vm.Labels[virtv1.VirtualMachinePoolRevisionName]] = true
		if vmi := f.VMIs[vm.Name]; vmi != nil {
			used[vmi.Labels[virtv1.VirtualMachinePoolRevisionName]] = true
		}
	}
	var out []string
	for name := range f.Revisions {
		if !used[name] {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// outdatedVM reports whether vm was not made from the pool's current
// template of VMs: no revision, an unknown one, or one whose template
// differs.
func outdatedVM(pool *poolv1.VirtualMachinePool, vm *virtv1.VirtualMachine, revs Revisions) bool {
	rev := revs[vm.Labels[virtv1.VirtualMachinePoolRevisionName]]
	return rev == nil || !equality.Semantic.DeepEqual(rev.VirtualMachineTemplate, pool.Spec.VirtualMachineTemplate)
}

type update int

const (
	updateNone update = iota
	updateRestart
	updateRelabel
	updateDelete
)

// outdatedVMI compares the revision vm's spec came from with the one its
// running vmi came from, as KubeVirt: a VMI of no known revision restarts;
// a changed VMI template restarts it; changed dataVolumeTemplates delete
// the VM (the pool makes it again); the same template under another
// revision only takes the VM's revision label.
func outdatedVMI(vm *virtv1.VirtualMachine, vmi *virtv1.VirtualMachineInstance, revs Revisions) update {
	vmRev, ok := vm.Labels[virtv1.VirtualMachinePoolRevisionName]
	if !ok {
		return updateNone
	}
	vmiRev, ok := vmi.Labels[virtv1.VirtualMachinePoolRevisionName]
	switch {
	case !ok:
		return updateRestart
	case vmRev == vmiRev:
		return updateNone
	}
	want, have := revs[vmRev], revs[vmiRev]
	switch {
	case want == nil || want.VirtualMachineTemplate == nil:
		return updateNone
	case have == nil || have.VirtualMachineTemplate == nil:
		// Gone or unreadable: what the VMI runs is unknown.
		return updateRestart
	case !equality.Semantic.DeepEqual(want.VirtualMachineTemplate.Spec.DataVolumeTemplates, have.VirtualMachineTemplate.Spec.DataVolumeTemplates):
		return updateDelete
	case !equality.Semantic.DeepEqual(want.VirtualMachineTemplate.Spec.Template, have.VirtualMachineTemplate.Spec.Template):
		return updateRestart
	}
	return updateRelabel
}

func replicas(pool *poolv1.VirtualMachinePool) int32 {
	if pool.Spec.Replicas == nil {
		return 1
	}
	return *pool.Spec.Replicas
}

func live(vms []*virtv1.VirtualMachine) []*virtv1.VirtualMachine {
	var out []*virtv1.VirtualMachine
	for _, vm := range vms {
		if vm.DeletionTimestamp == nil {
			out = append(out, vm)
		}
	}
	return out
}

func hasFinalizer(vm *virtv1.VirtualMachine) bool {
	for _, f := range vm.Finalizers {
		if f == poolv1.VirtualMachinePoolControllerFinalizer {
			return true
		}
	}
	return false
}

func vmReady(vm *virtv1.VirtualMachine) bool {
	c := conditions.VM().Find(vm.Status.Conditions, virtv1.VirtualMachineReady)
	return c != nil && c.Status == corev1.ConditionTrue
}

func vmiReady(vmi *virtv1.VirtualMachineInstance) bool {
	if vmi == nil || vmi.DeletionTimestamp != nil || vmi.Status.Phase != virtv1.Running {
		return false
	}
	c := conditions.VMI().Find(vmi.Status.Conditions, virtv1.VirtualMachineInstanceReady)
	return c != nil && c.Status == corev1.ConditionTrue
}
