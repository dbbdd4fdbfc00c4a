package pool

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	virtv1 "kubevirt.io/api/core/v1"
	poolv1 "kubevirt.io/api/pool/v1beta1"
)

var base = time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)

func testPool(replicas int32, generation int64) *poolv1.VirtualMachinePool {
	always := virtv1.RunStrategyAlways
	return &poolv1.VirtualMachinePool{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "pool-uid", Generation: generation},
		Spec: poolv1.VirtualMachinePoolSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			VirtualMachineTemplate: &poolv1.VirtualMachineTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: virtv1.VirtualMachineSpec{RunStrategy: &always, Template: &virtv1.VirtualMachineInstanceTemplateSpec{
					Spec: virtv1.VirtualMachineInstanceSpec{Domain: virtv1.DomainSpec{Resources: virtv1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}}}}}},
			},
		},
	}
}

type vmOpt func(*virtv1.VirtualMachine)

func rev(name string) vmOpt {
	return func(vm *virtv1.VirtualMachine) { vm.Labels[virtv1.VirtualMachinePoolRevisionName] = name }
}
func readyVM(vm *virtv1.VirtualMachine) {
	vm.Status.Conditions = []virtv1.VirtualMachineCondition{{Type: virtv1.VirtualMachineReady, Status: corev1.ConditionTrue}}
}
func gone(vm *virtv1.VirtualMachine) {
	now := metav1.NewTime(base)
	vm.DeletionTimestamp = &now
}
func ownedBy(uid types.UID) vmOpt {
	return func(vm *virtv1.VirtualMachine) { vm.OwnerReferences[0].UID = uid }
}
func labelled(app string) vmOpt { return func(vm *virtv1.VirtualMachine) { vm.Labels["app"] = app } }
func created(minutes int) vmOpt {
	return func(vm *virtv1.VirtualMachine) {
		vm.CreationTimestamp = metav1.NewTime(base.Add(time.Duration(minutes) * time.Minute))
	}
}

// poolVM is a VM of testPool at index i, of revision web-1 unless changed.
func poolVM(i int, opts ...vmOpt) virtv1.VirtualMachine {
	p := testPool(1, 1)
	yes := true
	vm := virtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{
		Name: "web-" + string(rune('0'+i)), Namespace: "default",
		Labels:          map[string]string{"app": "web", virtv1.VirtualMachinePoolRevisionName: "web-1"},
		Finalizers:      []string{poolv1.VirtualMachinePoolControllerFinalizer},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "pool.kubevirt.io/v1beta1", Kind: "VirtualMachinePool", Name: "web", UID: "pool-uid", Controller: &yes}},
	}, Spec: p.Spec.VirtualMachineTemplate.Spec}
	for _, o := range opts {
		o(&vm)
	}
	return vm
}

// vmiOf is the running, ready VMI of vm, made from revision.
func vmiOf(vm virtv1.VirtualMachine, revision string, ready bool) *virtv1.VirtualMachineInstance {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	return &virtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Name: vm.Name, Namespace: vm.Namespace, Labels: map[string]string{virtv1.VirtualMachinePoolRevisionName: revision}},
		Status: virtv1.VirtualMachineInstanceStatus{Phase: virtv1.Running,
			Conditions: []virtv1.VirtualMachineInstanceCondition{{Type: virtv1.VirtualMachineInstanceReady, Status: st}}},
	}
}

func keepOrder([]*virtv1.VirtualMachine) {}

func facts(pool *poolv1.VirtualMachinePool, vms []virtv1.VirtualMachine, vmis map[string]*virtv1.VirtualMachineInstance, revs Revisions) Facts {
	if revs == nil {
		revs = Revisions{}
	}
	revs[RevisionName(pool)] = &pool.Spec
	if vmis == nil {
		vmis = map[string]*virtv1.VirtualMachineInstance{}
	}
	return Facts{Pool: pool, VMs: vms, VMIs: vmis, Revisions: revs, Shuffle: keepOrder}
}

func TestPlanForScales(t *testing.T) {
	sortBy := func(p poolv1.VirtualMachinePoolSortPolicy) func(*poolv1.VirtualMachinePool) {
		return func(pl *poolv1.VirtualMachinePool) {
			pl.Spec.ScaleInStrategy = &poolv1.VirtualMachinePoolScaleInStrategy{Proactive: &poolv1.VirtualMachinePoolProactiveScaleInStrategy{
				SelectionPolicy: &poolv1.VirtualMachinePoolSelectionPolicy{SortPolicy: &p}}}
		}
	}
	foreign := poolVM(1, ownedBy("other"))
	for _, c := range []struct {
		name     string
		replicas int32
		mutate   func(*poolv1.VirtualMachinePool)
		vms      []virtv1.VirtualMachine
		want     Plan
	}{
		{name: "empty: the lowest indices", replicas: 3, want: Plan{Create: []int{0, 1, 2}}},
		{name: "gaps filled, names of others skipped", replicas: 3, vms: []virtv1.VirtualMachine{poolVM(0), foreign},
			want: Plan{Create: []int{2, 3}, Replicas: 1}},
		{name: "at count, up to date: nothing", replicas: 2, vms: []virtv1.VirtualMachine{poolVM(0, readyVM), poolVM(1)},
			want: Plan{Replicas: 2, ReadyReplicas: 1}},
		{name: "scale in by descending order", replicas: 1, mutate: sortBy(poolv1.VirtualMachinePoolSortPolicyDescendingOrder),
			vms: []virtv1.VirtualMachine{poolVM(0), poolVM(2), poolVM(1)}, want: Plan{Delete: []string{"web-2", "web-1"}, Replicas: 3}},
		{name: "scale in by ascending order", replicas: 2, mutate: sortBy(poolv1.VirtualMachinePoolSortPolicyAscendingOrder),
			vms: []virtv1.VirtualMachine{poolVM(2), poolVM(0), poolVM(1)}, want: Plan{Delete: []string{"web-0"}, Replicas: 3}},
		{name: "scale in the newest", replicas: 1, mutate: sortBy(poolv1.VirtualMachinePoolSortPolicyNewest),
			vms:  []virtv1.VirtualMachine{poolVM(0, created(1)), poolVM(1, created(3)), poolVM(2, created(2))},
			want: Plan{Delete: []string{"web-1", "web-2"}, Replicas: 3}},
		{name: "deleting VMs count toward a scale in, and lose the finalizer", replicas: 1,
			vms:  []virtv1.VirtualMachine{poolVM(0), poolVM(1, gone), poolVM(2)},
			want: Plan{Unfinalize: []string{"web-1"}, Delete: []string{"web-0"}, Replicas: 3}},
		{name: "opportunistic scale in deletes nothing", replicas: 1, mutate: func(p *poolv1.VirtualMachinePool) {
			p.Spec.ScaleInStrategy = &poolv1.VirtualMachinePoolScaleInStrategy{Opportunistic: &poolv1.VirtualMachinePoolOpportunisticScaleInStrategy{}}
		}, vms: []virtv1.VirtualMachine{poolVM(0), poolVM(1)}, want: Plan{Replicas: 2}},
		{name: "relabelled out of the selector: released", replicas: 1, vms: []virtv1.VirtualMachine{poolVM(0, labelled("debug"))},
			want: Plan{Release: []string{"web-0"}, Create: []int{1}}},
		{name: "paused: counts only", replicas: 3, mutate: func(p *poolv1.VirtualMachinePool) { p.Spec.Paused = true },
			vms: []virtv1.VirtualMachine{poolVM(0)}, want: Plan{Replicas: 1}},
		{name: "being deleted: every VM loses the finalizer", replicas: 3, mutate: func(p *poolv1.VirtualMachinePool) {
			now := metav1.NewTime(base)
			p.DeletionTimestamp = &now
		}, vms: []virtv1.VirtualMachine{poolVM(0), poolVM(1)}, want: Plan{Unfinalize: []string{"web-0", "web-1"}, Replicas: 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := testPool(c.replicas, 1)
			if c.mutate != nil {
				c.mutate(p)
			}
			got, err := PlanFor(facts(p, c.vms, nil, nil))
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(c.want, got); d != "" {
				t.Errorf("plan (-want +got):\n%s", d)
			}
		})
	}
}

func TestPlanForUpdates(t *testing.T) {
	old := testPool(2, 1)
	changed := testPool(2, 2) // the template's memory changed in generation 2
	changed.Spec.VirtualMachineTemplate.Spec.Template.Spec.Domain.Resources.Requests[corev1.ResourceMemory] = resource.MustParse("128Mi")
	relabelled := testPool(2, 3) // generation 3 only changes replicas-side fields
	relabelled.Spec.VirtualMachineTemplate = changed.Spec.VirtualMachineTemplate.DeepCopy()
	revs := func() Revisions { return Revisions{"web-1": &old.Spec, "web-2": &changed.Spec} }

	t.Run("outdated VMs are rewritten first", func(t *testing.T) {
		vms := []virtv1.VirtualMachine{poolVM(0, readyVM), poolVM(1, readyVM)}
		got, _ := PlanFor(facts(changed, vms, nil, revs()))
		if d := cmp.Diff([]string{"web-0", "web-1"}, got.Update); d != "" || got.Restart != nil || got.Prune != nil {
			t.Errorf("update (-want +got):\n%s\nplan %+v", d, got)
		}
	})
	t.Run("then their VMIs restart, maxUnavailable at a time", func(t *testing.T) {
		vms := []virtv1.VirtualMachine{poolVM(0, rev("web-2"), readyVM), poolVM(1, rev("web-2"), readyVM)}
		vmis := map[string]*virtv1.VirtualMachineInstance{"web-0": vmiOf(vms[0], "web-1", true), "web-1": vmiOf(vms[1], "web-1", true)}
		one := intstr.FromInt32(1)
		changed.Spec.MaxUnavailable = &one
		defer func() { changed.Spec.MaxUnavailable = nil }()
		got, _ := PlanFor(facts(changed, vms, vmis, revs()))
		if d := cmp.Diff(Plan{Restart: []string{"web-0"}, Retry: true, Replicas: 2, ReadyReplicas: 2}, got); d != "" {
			t.Errorf("plan (-want +got):\n%s", d)
		}
		// With web-0 down, nothing more goes down.
		vmis["web-0"].Status.Conditions[0].Status = corev1.ConditionFalse
		vms[0].Status.Conditions = nil
		got, _ = PlanFor(facts(changed, vms, vmis, revs()))
		if d := cmp.Diff(Plan{Restart: []string{"web-0"}, Retry: true, Replicas: 2, ReadyReplicas: 1}, got); d != "" {
			t.Errorf("with one down (-want +got):\n%s", d)
		}
	})
	t.Run("the opportunistic strategy leaves running VMIs alone", func(t *testing.T) {
		p := changed.DeepCopy()
		p.Spec.UpdateStrategy = &poolv1.VirtualMachinePoolUpdateStrategy{Opportunistic: &poolv1.VirtualMachineOpportunisticUpdateStrategy{}}
		vms := []virtv1.VirtualMachine{poolVM(0, rev("web-2"))}
		p.Spec.Replicas = new(int32(1))
		got, _ := PlanFor(facts(p, vms, map[string]*virtv1.VirtualMachineInstance{"web-0": vmiOf(vms[0], "web-1", true)}, revs()))
		if got.Restart != nil || got.Update != nil {
			t.Errorf("plan %+v, want no restart", got)
		}
	})
	t.Run("the unmanaged strategy updates nothing", func(t *testing.T) {
		p := changed.DeepCopy()
		p.Spec.UpdateStrategy = &poolv1.VirtualMachinePoolUpdateStrategy{Unmanaged: &poolv1.VirtualMachinePoolUnmanagedStrategy{}}
		got, _ := PlanFor(facts(p, []virtv1.VirtualMachine{poolVM(0), poolVM(1)}, nil, revs()))
		if got.Update != nil {
			t.Errorf("plan %+v, want no update", got)
		}
	})
	t.Run("the same template under a new revision: relabel, then prune", func(t *testing.T) {
		vms := []virtv1.VirtualMachine{poolVM(0, rev("web-2"), readyVM), poolVM(1, rev("web-2"), readyVM)}
		r := revs()
		r["web-0"] = &old.Spec // a revision nothing names
		vmis := map[string]*virtv1.VirtualMachineInstance{"web-0": vmiOf(vms[0], "web-2", true), "web-1": vmiOf(vms[1], "web-2", true)}
		got, _ := PlanFor(facts(relabelled, vms, vmis, r))
		// Generation 3's template equals generation 2's: the VMs are not
		// outdated, web-1 is no longer named: pruned. web-2 stays (named).
		if d := cmp.Diff(Plan{Prune: []string{"web-0", "web-1"}, Replicas: 2, ReadyReplicas: 2}, got); d != "" {
			t.Errorf("plan (-want +got):\n%s", d)
		}
		vms[0].Labels[virtv1.VirtualMachinePoolRevisionName] = "web-3"
		vmis["web-0"].Labels[virtv1.VirtualMachinePoolRevisionName] = "web-2"
		got, _ = PlanFor(facts(relabelled, vms, vmis, r))
		if d := cmp.Diff([]string{"web-0"}, got.Relabel); d != "" {
			t.Errorf("relabel (-want +got):\n%s", d)
		}
	})
	t.Run("a VMI of an unreadable revision restarts", func(t *testing.T) {
		vms := []virtv1.VirtualMachine{poolVM(0, rev("web-2"), readyVM)}
		r := revs()
		r["web-1"] = &poolv1.VirtualMachinePoolSpec{} // what facts keeps of a revision it cannot decode
		p := changed.DeepCopy()
		p.Spec.Replicas = new(int32(1))
		got, _ := PlanFor(facts(p, vms, map[string]*virtv1.VirtualMachineInstance{"web-0": vmiOf(vms[0], "web-1", true)}, r))
		if d := cmp.Diff([]string{"web-0"}, got.Restart); d != "" {
			t.Errorf("restart (-want +got):\n%s", d)
		}
	})
	t.Run("changed dataVolumeTemplates replace the VM", func(t *testing.T) {
		withDV := changed.DeepCopy()
		withDV.Generation = 4
		withDV.Spec.VirtualMachineTemplate.Spec.DataVolumeTemplates = []virtv1.DataVolumeTemplateSpec{{ObjectMeta: metav1.ObjectMeta{Name: "root"}}}
		r := revs()
		vms := []virtv1.VirtualMachine{poolVM(0, rev("web-4"), readyVM)}
		withDV.Spec.Replicas = new(int32(1))
		got, _ := PlanFor(facts(withDV, vms, map[string]*virtv1.VirtualMachineInstance{"web-0": vmiOf(vms[0], "web-2", true)}, r))
		if d := cmp.Diff([]string{"web-0"}, got.Delete); d != "" {
			t.Errorf("delete (-want +got):\n%s", d)
		}
	})
}

func TestNextStatus(t *testing.T) {
	p := testPool(2, 1)
	p.Spec.Paused = true
	now := metav1.NewTime(base)
	st := NextStatus(p, "app=web", Plan{Replicas: 2, ReadyReplicas: 1}, &SyncError{Reason: ReasonFailedScaleOut, Err: errString("quota")}, now)
	want := poolv1.VirtualMachinePoolStatus{Replicas: 2, ReadyReplicas: 1, LabelSelector: "app=web", Conditions: []poolv1.VirtualMachinePoolCondition{
		{Type: poolv1.VirtualMachinePoolReplicaPaused, Status: corev1.ConditionTrue, Reason: ReasonPaused, Message: "Pool controller is paused", LastTransitionTime: now},
		{Type: poolv1.VirtualMachinePoolReplicaFailure, Status: corev1.ConditionTrue, Reason: ReasonFailedScaleOut, Message: "quota", LastTransitionTime: now},
	}}
	if d := cmp.Diff(want, st); d != "" {
		t.Errorf("status (-want +got):\n%s", d)
	}
	p.Status, p.Spec.Paused = st, false
	if got := NextStatus(p, "app=web", Plan{}, nil, now); got.Conditions != nil {
		t.Errorf("conditions %+v after resuming without errors", got.Conditions)
	}
}

type errString string

func (e errString) Error() string { return string(e) }
