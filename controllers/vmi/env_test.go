package vmi

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	virtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/internal/testenv/kubeenv"
)

// cluster is a real apiserver with the VMI controller running in a manager.
// No scheduler or kubelet runs: tests play them.
type cluster struct {
	c      client.Client // direct client: plays the user, the scheduler and the kubelet
	env    *kubeenv.ControlPlaneEnv
	writes *countingClient
}

func startCluster(t *testing.T) *cluster {
	env := kubeenv.ControlPlane(t)
	cl := &cluster{c: env.Client, env: env, writes: &countingClient{Describe: describeWrite}}
	mgr := kubeenv.NewManager(t, env, func(o *ctrl.Options) {
		// Namespace "manual" is left to tests that call Reconcile themselves.
		o.Cache = cache.Options{DefaultNamespaces: map[string]cache.Config{
			"lifecycle": {}, "born": {}, "unschedulable": {}, "poddeleted": {}, "deletevmi": {}, "createfails": {}, "migrated": {}, "dvwait": {}, "wffc": {}, "statestorage": {}, "statelegacy": {}}}
	})
	cl.writes.Client = mgr.GetClient()
	// The real clock: the scheduling grace runs out as it would.
	r := New(WithClient(cl.writes, mgr.GetAPIReader()),
		WithPodOptions(PodOptions{LauncherImage: "virtkit/virt-launcher:test", Emulation: true}))
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	kubeenv.RunManager(t, mgr)
	return cl
}

// namespace creates a namespace (and its default service account, which no
// controller-manager creates here) for one subtest.
func (cl *cluster) namespace(t *testing.T, name string) string {
	t.Helper()
	ctx := context.Background()
	if err := cl.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	if err := cl.c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: name}}); err != nil {
		t.Fatal(err)
	}
	return name
}

// createVMI creates a small VMI with a containerDisk in ns.
func (cl *cluster) createVMI(t *testing.T, ns string, opts ...func(*virtv1.VirtualMachineInstance)) types.NamespacedName {
	t.Helper()
	vmi := &virtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Name: "vmi1", Namespace: ns, Labels: map[string]string{"app": "demo"}},
		Spec: virtv1.VirtualMachineInstanceSpec{
			Domain: virtv1.DomainSpec{
				Resources: virtv1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}},
				Devices:   virtv1.Devices{Disks: []virtv1.Disk{{Name: "rootdisk"}}},
			},
			Volumes: []virtv1.Volume{{Name: "rootdisk", VolumeSource: virtv1.VolumeSource{
				ContainerDisk: &virtv1.ContainerDiskSource{Image: "quay.io/containerdisks/fedora:41"}}}},
		},
	}
	for _, o := range opts {
		o(vmi)
	}
	if err := cl.c.Create(context.Background(), vmi); err != nil {
		t.Fatal(err)
	}
	return client.ObjectKeyFromObject(vmi)
}

// eventually polls cond every 50 ms for up to 15 s.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	testenv.EventuallyEvery(testenv.Within(t, 15*time.Second), t, 50*time.Millisecond, what, cond)
}

// vmi returns the VMI at key, nil when there is none.
func (cl *cluster) vmi(t *testing.T, key types.NamespacedName) *virtv1.VirtualMachineInstance {
	t.Helper()
	vmi := &virtv1.VirtualMachineInstance{}
	err := cl.c.Get(context.Background(), key, vmi)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return vmi
}

// waitVMI waits until the VMI at key satisfies check.
func (cl *cluster) waitVMI(t *testing.T, key types.NamespacedName, what string, check func(*virtv1.VirtualMachineInstance) bool) *virtv1.VirtualMachineInstance {
	t.Helper()
	var vmi *virtv1.VirtualMachineInstance
	eventually(t, "VMI "+what, func() (bool, string) {
		vmi = cl.vmi(t, key)
		if vmi == nil {
			return false, "no VMI"
		}
		return check(vmi), fmt.Sprintf("phase=%s reason=%q node=%q labels=%v conditions=%+v finalizers=%v",
			vmi.Status.Phase, vmi.Status.Reason, vmi.Status.NodeName, vmi.Labels, vmi.Status.Conditions, vmi.Finalizers)
	})
	return vmi
}

// pods returns the pods in ns.
func (cl *cluster) pods(t *testing.T, ns string) []corev1.Pod {
	t.Helper()
	l := &corev1.PodList{}
	if err := cl.c.List(context.Background(), l, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	return l.Items
}

// waitPod waits for the one launcher pod in ns.
func (cl *cluster) waitPod(t *testing.T, ns string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	eventually(t, "a launcher pod in "+ns, func() (bool, string) {
		pods := cl.pods(t, ns)
		if len(pods) != 1 {
			return false, fmt.Sprintf("%d pods", len(pods))
		}
		pod = &pods[0]
		return true, ""
	})
	return pod
}

// bind plays the scheduler: it binds the pod to node through pods/binding.
func (cl *cluster) bind(t *testing.T, pod *corev1.Pod, node string) {
	t.Helper()
	b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		Target: corev1.ObjectReference{Kind: "Node", Name: node}}
	if err := cl.c.SubResource("binding").Create(context.Background(), pod, b); err != nil {
		t.Fatalf("binding pod %s to %s: %v", pod.Name, node, err)
	}
}

// podStatus plays the scheduler or the kubelet: it changes the pod's status.
func (cl *cluster) podStatus(t *testing.T, pod *corev1.Pod, f func(*corev1.PodStatus)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p := &corev1.Pod{}
		if err := cl.c.Get(context.Background(), client.ObjectKeyFromObject(pod), p); err != nil {
			return err
		}
		f(&p.Status)
		return cl.c.Status().Update(context.Background(), p)
	})
	if err != nil {
		t.Fatalf("updating status of pod %s: %v", pod.Name, err)
	}
}

// countingClient records the writes the controller makes; describeWrite
// adds what a status write sets.
type countingClient = kubeenv.WriteCounter

func describeWrite(verb string, obj client.Object) string {
	if vmi, ok := obj.(*virtv1.VirtualMachineInstance); ok && verb == "status" {
		return string(vmi.Status.Phase)
	}
	return ""
}
