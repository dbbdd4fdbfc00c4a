package replicaset

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	virtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/internal/testenv/kubeenv"
)

// cluster is a real apiserver with the replica set controller running.
type cluster struct {
	c      client.Client
	events *record.FakeRecorder
}

func startCluster(t *testing.T) *cluster {
	env := kubeenv.ControlPlane(t)
	mgr := kubeenv.NewManager(t, env)
	cl := &cluster{c: env.Client, events: record.NewFakeRecorder(1000)}
	if err := New(WithEventRecorder(cl.events)).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	if err := ctrl.NewControllerManagedBy(mgr).Named("vmi-finalizer-release").For(&virtv1.VirtualMachineInstance{}).
		Complete(releaseFinalizer{env.Client}); err != nil {
		t.Fatal(err)
	}
	kubeenv.RunManager(t, mgr)
	return cl
}

// releaseFinalizer plays the VMI controller's part in a deletion: it lets
// a deleted VMI go at once (there is no pod).
type releaseFinalizer struct{ c client.Client }

func (r releaseFinalizer) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	vmi := &virtv1.VirtualMachineInstance{}
	if err := r.c.Get(ctx, req.NamespacedName, vmi); err != nil || vmi.DeletionTimestamp == nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if controllerutil.RemoveFinalizer(vmi, virtv1.VirtualMachineInstanceFinalizer) {
		return ctrl.Result{}, client.IgnoreNotFound(r.c.Update(ctx, vmi))
	}
	return ctrl.Result{}, nil
}

func (cl *cluster) namespace(t *testing.T, name string) string {
	t.Helper()
	if err := cl.c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	return name
}

func envRS(ns string, replicas int32) *virtv1.VirtualMachineInstanceReplicaSet {
	return &virtv1.VirtualMachineInstanceReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: virtv1.VirtualMachineInstanceReplicaSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: &virtv1.VirtualMachineInstanceTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: virtv1.VirtualMachineInstanceSpec{Domain: virtv1.DomainSpec{
					Resources: virtv1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}},
				}},
			},
		},
	}
}

// vmis returns the VMIs of ns not being deleted, by name.
func (cl *cluster) vmis(t *testing.T, ns string) []virtv1.VirtualMachineInstance {
	t.Helper()
	list := &virtv1.VirtualMachineInstanceList{}
	if err := cl.c.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	out := slices.DeleteFunc(list.Items, func(v virtv1.VirtualMachineInstance) bool { return v.DeletionTimestamp != nil })
	slices.SortFunc(out, func(a, b virtv1.VirtualMachineInstance) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func names(vmis []virtv1.VirtualMachineInstance) []string {
	var out []string
	for _, v := range vmis {
		out = append(out, v.Name)
	}
	return out
}

// waitVMIs waits until ns holds n VMIs not being deleted, all controlled by
// the replica set of uid, and returns them.
func (cl *cluster) waitVMIs(t *testing.T, ns string, uid types.UID, n int) []virtv1.VirtualMachineInstance {
	t.Helper()
	var got []virtv1.VirtualMachineInstance
	eventually(t, fmt.Sprintf("%d VMIs in %s", n, ns), func() (bool, string) {
		got = cl.vmis(t, ns)
		for _, v := range got {
			if ref := metav1.GetControllerOf(&v); ref == nil || ref.UID != uid {
				return false, fmt.Sprintf("%s controlled by %+v", v.Name, ref)
			}
		}
		return len(got) == n, fmt.Sprintf("VMIs %v", names(got))
	})
	return got
}

func (cl *cluster) getRS(t *testing.T, ns string) *virtv1.VirtualMachineInstanceReplicaSet {
	t.Helper()
	rs := &virtv1.VirtualMachineInstanceReplicaSet{}
	if err := cl.c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "web"}, rs); err != nil {
		t.Fatal(err)
	}
	return rs
}

// waitStatus waits until the replica set's status satisfies ok.
func (cl *cluster) waitStatus(t *testing.T, ns, what string, ok func(virtv1.VirtualMachineInstanceReplicaSetStatus) bool) {
	t.Helper()
	eventually(t, what, func() (bool, string) {
		st := cl.getRS(t, ns).Status
		return ok(st), fmt.Sprintf("status %+v", st)
	})
}

// scale sets spec.replicas through the scale subresource, as kubectl
// scale and a HorizontalPodAutoscaler do.
func (cl *cluster) scale(t *testing.T, ns string, replicas int32) {
	t.Helper()
	rs := cl.getRS(t, ns)
	patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)))
	if err := cl.c.SubResource("scale").Patch(context.Background(), rs, patch); err != nil {
		t.Fatalf("scaling to %d: %v", replicas, err)
	}
}

// mutateVMI changes a VMI (its status when status is set), retrying conflicts.
func (cl *cluster) mutateVMI(t *testing.T, key types.NamespacedName, status bool, f func(*virtv1.VirtualMachineInstance)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		vmi := &virtv1.VirtualMachineInstance{}
		if err := cl.c.Get(context.Background(), key, vmi); err != nil {
			return err
		}
		f(vmi)
		if status {
			return cl.c.Status().Update(context.Background(), vmi)
		}
		return cl.c.Update(context.Background(), vmi)
	})
	if err != nil {
		t.Fatalf("updating VMI %s: %v", key, err)
	}
}

func (cl *cluster) mutateRS(t *testing.T, ns string, f func(*virtv1.VirtualMachineInstanceReplicaSet)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		rs := cl.getRS(t, ns)
		f(rs)
		return cl.c.Update(context.Background(), rs)
	})
	if err != nil {
		t.Fatalf("updating the replica set: %v", err)
	}
}

// sawEvents checks that events of each of the given "type reason" prefixes
// were recorded, draining those recorded so far.
func (cl *cluster) sawEvents(t *testing.T, want ...string) {
	t.Helper()
	var got []string
	for len(cl.events.Events) > 0 {
		got = append(got, <-cl.events.Events)
	}
	for _, w := range want {
		if !slices.ContainsFunc(got, func(e string) bool { return strings.HasPrefix(e, w+" ") }) {
			t.Errorf("no %q event among %q", w, got)
		}
	}
}

func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	testenv.EventuallyEvery(testenv.Within(t, 15*time.Second), t, 50*time.Millisecond, what, cond)
}

func consistently(t *testing.T, what string, d time.Duration, cond func() (bool, string)) {
	t.Helper()
	testenv.Consistently(testenv.Within(t, d), t, 50*time.Millisecond, what, cond)
}

func TestReplicaSetOnARealAPIServer(t *testing.T) {
	cl := startCluster(t)
	ctx := context.Background()

	t.Run("scales through the scale subresource, least advanced first", func(t *testing.T) {
		ns := cl.namespace(t, "scale")
		rs := envRS(ns, 3)
		if err := cl.c.Create(ctx, rs); err != nil {
			t.Fatal(err)
		}
		vmis := cl.waitVMIs(t, ns, rs.UID, 3)
		for _, v := range vmis {
			if !strings.HasPrefix(v.Name, "web") || v.Labels["app"] != "web" || !controllerutil.ContainsFinalizer(&v, virtv1.VirtualMachineInstanceFinalizer) {
				t.Errorf("VMI %s: labels %v finalizers %v", v.Name, v.Labels, v.Finalizers)
			}
		}
		// Exactly three: a lagging cache does not make a fourth.
		consistently(t, "three VMIs", time.Second, func() (bool, string) {
			got := cl.vmis(t, ns)
			return len(got) == 3, fmt.Sprintf("VMIs %v", names(got))
		})
		cl.waitStatus(t, ns, "status counting three", func(st virtv1.VirtualMachineInstanceReplicaSetStatus) bool {
			return st.Replicas == 3 && st.ReadyReplicas == 0 && st.LabelSelector == "app=web"
		})

		keep := client.ObjectKeyFromObject(&vmis[1])
		cl.mutateVMI(t, keep, true, func(v *virtv1.VirtualMachineInstance) {
			v.Status.Phase = virtv1.Running
			v.Status.Conditions = []virtv1.VirtualMachineInstanceCondition{{Type: virtv1.VirtualMachineInstanceReady, Status: corev1.ConditionTrue}}
		})
		cl.waitStatus(t, ns, "one ready", func(st virtv1.VirtualMachineInstanceReplicaSetStatus) bool { return st.ReadyReplicas == 1 })

		// The scale subresource reads what an autoscaler reads.
		sc := &autoscalingv1.Scale{}
		if err := cl.c.SubResource("scale").Get(ctx, cl.getRS(t, ns), sc); err != nil {
			t.Fatal(err)
		}
		if sc.Spec.Replicas != 3 || sc.Status.Replicas != 3 || sc.Status.Selector != "app=web" {
			t.Errorf("scale %+v, want 3 wanted, 3 current, selector app=web", sc)
		}

		cl.scale(t, ns, 1)
		left := cl.waitVMIs(t, ns, rs.UID, 1)
		if left[0].Name != keep.Name {
			t.Errorf("scaling down kept %s, want the ready %s", left[0].Name, keep.Name)
		}
		cl.waitStatus(t, ns, "status counting one", func(st virtv1.VirtualMachineInstanceReplicaSetStatus) bool {
			return st.Replicas == 1 && st.ReadyReplicas == 1
		})

		cl.sawEvents(t, "Normal "+ReasonSuccessfulCreate, "Normal "+ReasonSuccessfulDelete)

		// A VMI killed is replaced.
		if err := cl.c.Delete(ctx, &left[0]); err != nil {
			t.Fatal(err)
		}
		eventually(t, "a replacement", func() (bool, string) {
			got := cl.vmis(t, ns)
			return len(got) == 1 && got[0].Name != keep.Name, fmt.Sprintf("VMIs %v", names(got))
		})

		// A finished VMI is deleted and replaced.
		now := cl.vmis(t, ns)[0]
		cl.mutateVMI(t, client.ObjectKeyFromObject(&now), true, func(v *virtv1.VirtualMachineInstance) { v.Status.Phase = virtv1.Failed })
		eventually(t, "the failed VMI replaced", func() (bool, string) {
			got := cl.vmis(t, ns)
			return len(got) == 1 && got[0].Name != now.Name, fmt.Sprintf("VMIs %v", names(got))
		})
	})

	t.Run("adopts orphans, releases relabelled VMIs, pauses", func(t *testing.T) {
		ns := cl.namespace(t, "claim")
		rs := envRS(ns, 2)
		rs.Spec.Paused = true
		if err := cl.c.Create(ctx, rs); err != nil {
			t.Fatal(err)
		}
		cl.waitStatus(t, ns, "paused", func(st virtv1.VirtualMachineInstanceReplicaSetStatus) bool {
			return len(st.Conditions) == 1 && st.Conditions[0].Type == virtv1.VirtualMachineInstanceReplicaSetReplicaPaused
		})
		consistently(t, "nothing created while paused", 500*time.Millisecond, func() (bool, string) {
			got := cl.vmis(t, ns)
			return len(got) == 0, fmt.Sprintf("VMIs %v", names(got))
		})

		orphanVMI := &virtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "stray", Namespace: ns, Labels: map[string]string{"app": "web"}},
			Spec: rs.Spec.Template.Spec}
		other := orphanVMI.DeepCopy()
		other.Name, other.Labels = "bystander", map[string]string{"app": "db"}
		for _, v := range []*virtv1.VirtualMachineInstance{orphanVMI, other} {
			if err := cl.c.Create(ctx, v); err != nil {
				t.Fatal(err)
			}
		}
		eventually(t, "the orphan adopted", func() (bool, string) {
			v := &virtv1.VirtualMachineInstance{}
			if err := cl.c.Get(ctx, client.ObjectKeyFromObject(orphanVMI), v); err != nil {
				return false, err.Error()
			}
			ref := metav1.GetControllerOf(v)
			return ref != nil && ref.UID == rs.UID && ref.Kind == "VirtualMachineInstanceReplicaSet", fmt.Sprintf("controller %+v", ref)
		})
		cl.waitStatus(t, ns, "counting the adopted", func(st virtv1.VirtualMachineInstanceReplicaSetStatus) bool { return st.Replicas == 1 })

		cl.mutateRS(t, ns, func(r *virtv1.VirtualMachineInstanceReplicaSet) { r.Spec.Paused = false })
		eventually(t, "two VMIs of the replica set", func() (bool, string) {
			var mine []string
			for _, v := range cl.vmis(t, ns) {
				if ref := metav1.GetControllerOf(&v); ref != nil && ref.UID == rs.UID {
					mine = append(mine, v.Name)
				}
			}
			return len(mine) == 2 && slices.Contains(mine, "stray"), fmt.Sprintf("controlled %v", mine)
		})
		cl.waitStatus(t, ns, "resumed", func(st virtv1.VirtualMachineInstanceReplicaSetStatus) bool {
			return st.Conditions == nil && st.Replicas == 2
		})

		// Relabelled out of the selector: let go, left running, replaced.
		cl.mutateVMI(t, client.ObjectKeyFromObject(orphanVMI), false, func(v *virtv1.VirtualMachineInstance) { v.Labels["app"] = "debug" })
		eventually(t, "the relabelled VMI released", func() (bool, string) {
			v := &virtv1.VirtualMachineInstance{}
			if err := cl.c.Get(ctx, client.ObjectKeyFromObject(orphanVMI), v); err != nil {
				return false, err.Error()
			}
			return metav1.GetControllerOf(v) == nil && v.DeletionTimestamp == nil, fmt.Sprintf("owners %+v", v.OwnerReferences)
		})
		// The status said 2 before the release too: wait for the
		// replacement itself.
		eventually(t, "a replacement beside the released VMI", func() (bool, string) {
			var mine []string
			all := cl.vmis(t, ns)
			for _, v := range all {
				if ref := metav1.GetControllerOf(&v); ref != nil && ref.UID == rs.UID {
					mine = append(mine, v.Name)
				}
			}
			return len(all) == 4 && len(mine) == 2 && !slices.Contains(mine, "stray"),
				fmt.Sprintf("VMIs %v, of the replica set %v (want 4: two of the replica set, the released one, the bystander)", names(all), mine)
		})
		cl.waitStatus(t, ns, "two again", func(st virtv1.VirtualMachineInstanceReplicaSetStatus) bool { return st.Replicas == 2 })
		v := &virtv1.VirtualMachineInstance{}
		if err := cl.c.Get(ctx, client.ObjectKeyFromObject(other), v); err != nil || len(v.OwnerReferences) != 0 {
			t.Errorf("the bystander: %v, owners %+v", err, v.OwnerReferences)
		}
	})

	t.Run("an invalid template stored past the webhook fails with the field", func(t *testing.T) {
		ns := cl.namespace(t, "invalid")
		rs := envRS(ns, 2)
		rs.Spec.Template.Spec.Domain.Devices.Disks = []virtv1.Disk{{Name: "root", Cache: "unsafe"}}
		if err := cl.c.Create(ctx, rs); err != nil {
			t.Fatal(err)
		}
		cl.waitStatus(t, ns, "ReplicaFailure", func(st virtv1.VirtualMachineInstanceReplicaSetStatus) bool {
			return len(st.Conditions) == 1 && st.Conditions[0].Type == virtv1.VirtualMachineInstanceReplicaSetReplicaFailure &&
				st.Conditions[0].Reason == ReasonFailedCreate && strings.Contains(st.Conditions[0].Message, "spec.template.spec.domain.devices.disks[0].cache")
		})
		if got := cl.vmis(t, ns); len(got) != 0 {
			t.Errorf("VMIs %v created from an invalid template", names(got))
		}
	})
}
