package pool

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	virtv1 "kubevirt.io/api/core/v1"
	poolv1 "kubevirt.io/api/pool/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/internal/testenv/kubeenv"
)

type cluster struct {
	c      client.Client
	events *record.FakeRecorder
}

func startCluster(t *testing.T) *cluster {
	env := kubeenv.ControlPlane(t)
	mgr := kubeenv.NewManager(t, env)
	cl := &cluster{c: env.Client, events: record.NewFakeRecorder(1000)}
	if err := New(WithEventRecorder(cl.events), WithShuffle(keepOrder)).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	kubeenv.RunManager(t, mgr)
	return cl
}

func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	testenv.EventuallyEvery(testenv.Within(t, 15*time.Second), t, 50*time.Millisecond, what, cond)
}

// vms returns the names of the VMs of ns not being deleted, sorted.
func (cl *cluster) vms(t *testing.T, ns string) []virtv1.VirtualMachine {
	t.Helper()
	list := &virtv1.VirtualMachineList{}
	if err := cl.c.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	out := slices.DeleteFunc(list.Items, func(vm virtv1.VirtualMachine) bool { return vm.DeletionTimestamp != nil })
	slices.SortFunc(out, func(a, b virtv1.VirtualMachine) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func names(vms []virtv1.VirtualMachine) []string {
	var out []string
	for _, vm := range vms {
		out = append(out, vm.Name)
	}
	return out
}

func (cl *cluster) waitVMs(t *testing.T, ns string, want ...string) []virtv1.VirtualMachine {
	t.Helper()
	var got []virtv1.VirtualMachine
	eventually(t, fmt.Sprintf("VMs %v", want), func() (bool, string) {
		got = cl.vms(t, ns)
		return slices.Equal(names(got), want), fmt.Sprintf("VMs %v", names(got))
	})
	return got
}

func (cl *cluster) getPool(t *testing.T, ns string) *poolv1.VirtualMachinePool {
	t.Helper()
	p := &poolv1.VirtualMachinePool{}
	if err := cl.c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "web"}, p); err != nil {
		t.Fatal(err)
	}
	return p
}

func (cl *cluster) revisions(t *testing.T, ns string) []string {
	t.Helper()
	list := &appsv1.ControllerRevisionList{}
	if err := cl.c.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range list.Items {
		out = append(out, r.Name)
	}
	slices.Sort(out)
	return out
}

func (cl *cluster) mutatePool(t *testing.T, ns string, f func(*poolv1.VirtualMachinePool)) {
	t.Helper()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p := cl.getPool(t, ns)
		f(p)
		return cl.c.Update(context.Background(), p)
	}); err != nil {
		t.Fatal(err)
	}
}

func TestPoolOnARealAPIServer(t *testing.T) {
	cl := startCluster(t)
	ctx := context.Background()
	ns := "pool"
	if err := cl.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	p := testPool(3, 0)
	p.Namespace, p.UID = ns, ""
	desc := poolv1.VirtualMachinePoolSortPolicyDescendingOrder
	p.Spec.ScaleInStrategy = &poolv1.VirtualMachinePoolScaleInStrategy{Proactive: &poolv1.VirtualMachinePoolProactiveScaleInStrategy{
		SelectionPolicy: &poolv1.VirtualMachinePoolSelectionPolicy{SortPolicy: &desc}}}
	yes := true
	p.Spec.NameGeneration = &poolv1.VirtualMachinePoolNameGeneration{AppendIndexToSecretRefs: &yes}
	p.Spec.VirtualMachineTemplate.Spec.Template.Spec.Volumes = []virtv1.Volume{{Name: "cloudinit", VolumeSource: virtv1.VolumeSource{
		CloudInitNoCloud: &virtv1.CloudInitNoCloudSource{UserDataSecretRef: &corev1.LocalObjectReference{Name: "userdata"}}}}}
	if err := cl.c.Create(ctx, p); err != nil {
		t.Fatal(err)
	}

	vms := cl.waitVMs(t, ns, "web-0", "web-1", "web-2")
	for i, vm := range vms {
		ref := metav1.GetControllerOf(&vm)
		secret := vm.Spec.Template.Spec.Volumes[0].CloudInitNoCloud.UserDataSecretRef.Name
		if ref == nil || ref.UID != p.UID || !slices.Contains(vm.Finalizers, poolv1.VirtualMachinePoolControllerFinalizer) ||
			vm.Labels[virtv1.VirtualMachinePoolRevisionName] != "web-1" || secret != fmt.Sprintf("userdata-%d", i) {
			t.Errorf("VM %s: controller %+v, finalizers %v, labels %v, user data secret %q", vm.Name, ref, vm.Finalizers, vm.Labels, secret)
		}
	}
	if got := cl.revisions(t, ns); !slices.Equal(got, []string{"web-1"}) {
		t.Errorf("revisions %v, want web-1", got)
	}
	eventually(t, "status counting three", func() (bool, string) {
		st := cl.getPool(t, ns).Status
		return st.Replicas == 3 && st.LabelSelector == "app=web", fmt.Sprintf("status %+v", st)
	})

	// kubectl scale: the highest indices go (DescendingOrder), finalizers
	// released by the pool.
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":1}}`))
	if err := cl.c.SubResource("scale").Patch(ctx, cl.getPool(t, ns), patch); err != nil {
		t.Fatal(err)
	}
	eventually(t, "web-1 and web-2 gone", func() (bool, string) {
		list := &virtv1.VirtualMachineList{}
		if err := cl.c.List(ctx, list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		return slices.Equal(names(list.Items), []string{"web-0"}), fmt.Sprintf("VMs %v", names(list.Items))
	})
	sc := &autoscalingv1.Scale{}
	if err := cl.c.SubResource("scale").Get(ctx, cl.getPool(t, ns), sc); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the scale status", func() (bool, string) {
		if err := cl.c.SubResource("scale").Get(ctx, cl.getPool(t, ns), sc); err != nil {
			return false, err.Error()
		}
		return sc.Spec.Replicas == 1 && sc.Status.Replicas == 1 && sc.Status.Selector == "app=web", fmt.Sprintf("scale %+v", sc)
	})

	// A running VMI of web-0, from the first revision.
	vmi := &virtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: ns,
		Labels: map[string]string{virtv1.VirtualMachinePoolRevisionName: "web-1"}}, Spec: p.Spec.VirtualMachineTemplate.Spec.Template.Spec}
	if err := cl.c.Create(ctx, vmi); err != nil {
		t.Fatal(err)
	}
	// The template changes: web-0 is rewritten, its VMI restarted (deleted
	// for its VM to start anew), the old revisions pruned.
	cl.mutatePool(t, ns, func(p *poolv1.VirtualMachinePool) {
		p.Spec.VirtualMachineTemplate.Spec.Template.Spec.Domain.Resources.Requests[corev1.ResourceMemory] = resource.MustParse("128Mi")
	})
	current := RevisionName(cl.getPool(t, ns))
	eventually(t, "web-0 rewritten", func() (bool, string) {
		vm := cl.vms(t, ns)[0]
		mem := vm.Spec.Template.Spec.Domain.Resources.Requests[corev1.ResourceMemory]
		return vm.Labels[virtv1.VirtualMachinePoolRevisionName] == current && mem.String() == "128Mi",
			fmt.Sprintf("revision %s memory %s", vm.Labels[virtv1.VirtualMachinePoolRevisionName], mem.String())
	})
	eventually(t, "the outdated VMI restarted", func() (bool, string) {
		err := cl.c.Get(ctx, client.ObjectKeyFromObject(vmi), &virtv1.VirtualMachineInstance{})
		return apierrors.IsNotFound(err), fmt.Sprintf("VMI: %v", err)
	})
	eventually(t, "old revisions pruned", func() (bool, string) {
		got := cl.revisions(t, ns)
		return slices.Equal(got, []string{current}), fmt.Sprintf("revisions %v, want [%s]", got, current)
	})

	// Deleting the pool releases its VMs' finalizers, then its own.
	if err := cl.c.Delete(ctx, cl.getPool(t, ns)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the pool gone, its VM released", func() (bool, string) {
		err := cl.c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "web"}, &poolv1.VirtualMachinePool{})
		vms := cl.vms(t, ns)
		return apierrors.IsNotFound(err) && len(vms) == 1 && len(vms[0].Finalizers) == 0,
			fmt.Sprintf("pool: %v; VMs %v", err, vms)
	})
}
