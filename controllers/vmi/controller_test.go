package vmi

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/virtkit/virtkit/controllers/conditions"
	"github.com/virtkit/virtkit/virt/launcher/contract"
)

// TestController runs the controller in a manager against a real apiserver;
// the test plays the user, the scheduler and the kubelet.
func TestController(t *testing.T) {
	cl := startCluster(t)
	t.Run("Lifecycle", func(t *testing.T) { testLifecycle(t, cl) })
	t.Run("BornWithFinalizer", func(t *testing.T) { testBornWithFinalizer(t, cl) })
	t.Run("Unschedulable", func(t *testing.T) { testUnschedulable(t, cl) })
	t.Run("PodDeleted", func(t *testing.T) { testPodDeleted(t, cl) })
	t.Run("DeleteVMI", func(t *testing.T) { testDeleteVMI(t, cl) })
	t.Run("CreateFails", func(t *testing.T) { testCreateFails(t, cl) })
	t.Run("ControllerRestart", func(t *testing.T) { testControllerRestart(t, cl) })
	t.Run("Migrated", func(t *testing.T) { testMigrated(t, cl) })
	t.Run("WaitsForDataVolume", func(t *testing.T) { testWaitsForDataVolume(t, cl) })
	t.Run("ProvisionsForFirstConsumer", func(t *testing.T) { testProvisionsForFirstConsumer(t, cl) })
}

// testLifecycle: VMI -> pod -> Scheduling -> bind -> Scheduled -> the
// launcher fails -> Failed with its reason -> pod deleted -> VMI deleted ->
// finalizer released; and the writes it took.
func testLifecycle(t *testing.T, cl *cluster) {
	ns := cl.namespace(t, "lifecycle")
	key := cl.createVMI(t, ns)
	pod := cl.waitPod(t, ns)
	vmi := cl.waitVMI(t, key, "Scheduling", func(v *virtv1.VirtualMachineInstance) bool { return v.Status.Phase == virtv1.Scheduling })

	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.UID != vmi.UID || ref.Kind != "VirtualMachineInstance" {
		t.Errorf("pod controller reference = %+v, want the VMI %s", ref, vmi.UID)
	}
	if !controllerutil.ContainsFinalizer(vmi, Finalizer) {
		t.Errorf("VMI finalizers = %v, want %s", vmi.Finalizers, Finalizer)
	}
	if d := cmp.Diff(map[string]string{"app": "demo", "kubevirt.io": "virt-launcher", "kubevirt.io/created-by": string(vmi.UID),
		"vm.kubevirt.io/name": "vmi1", "vmi.kubevirt.io/id": "vmi1"}, pod.Labels); d != "" {
		t.Errorf("pod labels (-want +got):\n%s", d)
	}
	if got := pod.Spec.Containers[0].Resources.Requests.Memory().String(); got != "368Mi" {
		t.Errorf("pod memory request = %s, want 368Mi (64Mi guest + 304Mi TCG overhead)", got)
	}
	var image *corev1.Volume
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Image != nil {
			image = &pod.Spec.Volumes[i]
		}
	}
	if image == nil || image.Image.Reference != "quay.io/containerdisks/fedora:41" {
		t.Errorf("containerDisk pod volume = %+v in %+v, want an image volume (did the apiserver drop it?)", image, pod.Spec.Volumes)
	}

	cl.bind(t, pod, "node1")
	vmi = cl.waitVMI(t, key, "Scheduled on node1", func(v *virtv1.VirtualMachineInstance) bool {
		return v.Status.Phase == virtv1.Scheduled && v.Status.NodeName == "node1"
	})
	if got := vmi.Status.ActivePods[pod.UID]; got != "node1" {
		t.Errorf("activePods = %v, want %s on node1", vmi.Status.ActivePods, pod.UID)
	}
	want := []string{"update VirtualMachineInstance", "create Pod", "status VirtualMachineInstance Scheduling",
		"status VirtualMachineInstance Scheduled"}
	toScheduled := cl.writes.WritesAtLeast(ns, len(want), 5*time.Second)
	if d := cmp.Diff(want, toScheduled); d != "" {
		t.Errorf("writes from creation to Scheduled (-want +got):\n%s", d)
	}
	time.Sleep(time.Second)
	if got := cl.writes.Writes(ns); len(got) != len(toScheduled) {
		t.Errorf("writes while nothing changed: %v", got[len(toScheduled):])
	}

	// The kubelet: the launcher could not start, and said why.
	cl.podStatus(t, pod, func(st *corev1.PodStatus) {
		st.Phase = corev1.PodFailed
		st.ContainerStatuses = []corev1.ContainerStatus{{Name: ComputeContainer, Image: pod.Spec.Containers[0].Image, ImageID: "sha256:0",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: contract.ExitSetupFailed, Reason: "Error",
				Message: "libvirtd: cannot create socket: permission denied\n"}}}}
	})
	cl.waitVMI(t, key, "Failed with the launcher's reason", func(v *virtv1.VirtualMachineInstance) bool {
		c := condition(v, virtv1.VirtualMachineInstanceReady)
		return v.Status.Phase == virtv1.Failed && v.Status.Reason == ReasonLauncherSetupFailed &&
			c != nil && c.Message == "libvirtd: cannot create socket: permission denied"
	})
	// A failed pod is deleted at once (the apiserver skips the grace period of a terminated pod).
	eventually(t, "the failed pod deleted", func() (bool, string) {
		n := len(cl.pods(t, ns))
		return n == 0, fmt.Sprintf("%d pods", n)
	})

	if err := cl.c.Delete(context.Background(), vmi); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the VMI gone", func() (bool, string) { return cl.vmi(t, key) == nil, "VMI still there" })
	want = append(want, "status VirtualMachineInstance Failed", "delete Pod", "update VirtualMachineInstance")
	if d := cmp.Diff(want, cl.writes.WritesAtLeast(ns, len(want), 5*time.Second)); d != "" {
		t.Errorf("writes over the VMI's life (-want +got):\n%s", d)
	}
}

// testUnschedulable: the scheduler's reason reaches the VMI.
func testUnschedulable(t *testing.T, cl *cluster) {
	ns := cl.namespace(t, "unschedulable")
	key := cl.createVMI(t, ns)
	pod := cl.waitPod(t, ns)
	cl.waitVMI(t, key, "Scheduling", func(v *virtv1.VirtualMachineInstance) bool { return v.Status.Phase == virtv1.Scheduling })
	msg := "0/3 nodes are available: 3 Insufficient devices.kubevirt.io/kvm."
	cl.podStatus(t, pod, func(st *corev1.PodStatus) {
		st.Conditions = append(st.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonUnschedulable, Message: msg, LastTransitionTime: metav1.Now()})
	})
	cl.waitVMI(t, key, "PodScheduled=False with the scheduler's reason", func(v *virtv1.VirtualMachineInstance) bool {
		c := condition(v, PodScheduled)
		return v.Status.Phase == virtv1.Scheduling && c != nil && c.Status == corev1.ConditionFalse &&
			c.Reason == corev1.PodReasonUnschedulable && c.Message == msg
	})
	// A node frees up: bound, the condition goes.
	cl.bind(t, pod, "node2")
	cl.podStatus(t, pod, func(st *corev1.PodStatus) {
		st.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
	})
	cl.waitVMI(t, key, "Scheduled without the condition", func(v *virtv1.VirtualMachineInstance) bool {
		return v.Status.Phase == virtv1.Scheduled && v.Status.NodeName == "node2" && condition(v, PodScheduled) == nil
	})
}

// testPodDeleted: a pod deleted before the handler took over fails the VMI.
func testPodDeleted(t *testing.T, cl *cluster) {
	ns := cl.namespace(t, "poddeleted")
	key := cl.createVMI(t, ns)
	pod := cl.waitPod(t, ns)
	cl.waitVMI(t, key, "Scheduling", func(v *virtv1.VirtualMachineInstance) bool { return v.Status.Phase == virtv1.Scheduling })
	if err := cl.c.Delete(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	cl.waitVMI(t, key, "Failed, PodNotExists", func(v *virtv1.VirtualMachineInstance) bool {
		return v.Status.Phase == virtv1.Failed && v.Status.Reason == ReasonPodNotExists
	})
	time.Sleep(500 * time.Millisecond)
	if n := len(cl.pods(t, ns)); n != 0 {
		t.Errorf("%d pods after the VMI failed, want none (no new pod for a failed VMI)", n)
	}
}

// testBornWithFinalizer: a VMI created with the controller's finalizer, as
// the mutating webhook and the VM controller create them, whose pod is
// bound within the scheduling grace, costs one VMI write to Scheduled (its
// status, every phase stamped) plus the pod's creation; and the handler
// finds it by the status.nodeName field selector, not by a label.
func testBornWithFinalizer(t *testing.T, cl *cluster) {
	ns := cl.namespace(t, "born")
	key := cl.createVMI(t, ns, func(v *virtv1.VirtualMachineInstance) { v.Finalizers = []string{Finalizer} })
	pod := cl.waitPod(t, ns)
	cl.bind(t, pod, "node7")
	vmi := cl.waitVMI(t, key, "Scheduled on node7", func(v *virtv1.VirtualMachineInstance) bool {
		return v.Status.Phase == virtv1.Scheduled && v.Status.NodeName == "node7"
	})
	var phases []virtv1.VirtualMachineInstancePhase
	for _, p := range vmi.Status.PhaseTransitionTimestamps {
		phases = append(phases, p.Phase)
	}
	if d := cmp.Diff([]virtv1.VirtualMachineInstancePhase{virtv1.Pending, virtv1.Scheduling, virtv1.Scheduled}, phases); d != "" {
		t.Errorf("phase transitions (-want +got):\n%s", d)
	}
	want := []string{"create Pod", "status VirtualMachineInstance Scheduled"}
	// The test sees Scheduled as soon as the apiserver has it; the write
	// that set it is counted once it returns to the controller.
	if d := cmp.Diff(want, cl.writes.WritesAtLeast(ns, len(want), 5*time.Second)); d != "" {
		t.Errorf("writes from creation to Scheduled (-want +got):\n%s", d)
	}
	var list virtv1.VirtualMachineInstanceList
	if err := cl.c.List(context.Background(), &list, client.MatchingFields{"status.nodeName": "node7"}); err != nil {
		t.Fatalf("listing VMIs by status.nodeName: %v", err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != key.Name {
		t.Errorf("VMIs with status.nodeName=node7: %d, want exactly %s", len(list.Items), key)
	}
}

// testDeleteVMI: a deleted VMI keeps its finalizer while its pod terminates
// gracefully, and goes once the pod is gone.
func testDeleteVMI(t *testing.T, cl *cluster) {
	ns := cl.namespace(t, "deletevmi")
	key := cl.createVMI(t, ns)
	pod := cl.waitPod(t, ns)
	cl.bind(t, pod, "node1")
	vmi := cl.waitVMI(t, key, "Scheduled", func(v *virtv1.VirtualMachineInstance) bool { return v.Status.Phase == virtv1.Scheduled })
	if err := cl.c.Delete(context.Background(), vmi); err != nil {
		t.Fatal(err)
	}
	var p corev1.Pod
	eventually(t, "the pod terminating gracefully", func() (bool, string) {
		if err := cl.c.Get(context.Background(), client.ObjectKeyFromObject(pod), &p); err != nil {
			return false, err.Error()
		}
		return p.DeletionTimestamp != nil, "no deletionTimestamp"
	})
	if p.DeletionGracePeriodSeconds == nil || *p.DeletionGracePeriodSeconds != 45 {
		t.Errorf("pod deletion grace period = %v, want 45 (30 + 15)", p.DeletionGracePeriodSeconds)
	}
	time.Sleep(500 * time.Millisecond)
	if v := cl.vmi(t, key); v == nil {
		t.Fatal("the VMI went before its pod")
	}
	// The kubelet: the launcher ended.
	zero := int64(0)
	if err := cl.c.Delete(context.Background(), &p, &client.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the VMI gone", func() (bool, string) { return cl.vmi(t, key) == nil, "VMI still there" })
}

func condition(v *virtv1.VirtualMachineInstance, ty virtv1.VirtualMachineInstanceConditionType) *virtv1.VirtualMachineInstanceCondition {
	return conditions.VMI().Find(v.Status.Conditions, ty)
}

// testCreateFails: a VMI that cannot have a pod says why, in Pending.
func testCreateFails(t *testing.T, cl *cluster) {
	ns := cl.namespace(t, "createfails")
	vmi := &virtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Name: "nomemory", Namespace: ns},
		Spec:       virtv1.VirtualMachineInstanceSpec{Domain: virtv1.DomainSpec{Devices: virtv1.Devices{}}},
	}
	if err := cl.c.Create(context.Background(), vmi); err != nil {
		t.Fatal(err)
	}
	cl.waitVMI(t, client.ObjectKeyFromObject(vmi), "Pending with Synchronized=False", func(v *virtv1.VirtualMachineInstance) bool {
		c := condition(v, virtv1.VirtualMachineInstanceSynchronized)
		return v.Status.Phase == virtv1.Pending && c != nil && c.Reason == ReasonFailedCreate &&
			strings.Contains(c.Message, "spec.domain.resources.requests.memory")
	})
	time.Sleep(500 * time.Millisecond)
	if n := len(cl.pods(t, ns)); n != 0 {
		t.Errorf("%d pods, want none", n)
	}
	eventually(t, "a FailedCreate event on the VMI", func() (bool, string) {
		evs := &corev1.EventList{}
		if err := cl.c.List(context.Background(), evs, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		for _, e := range evs.Items {
			if e.Reason == ReasonFailedCreate && e.InvolvedObject.Name == "nomemory" && strings.Contains(e.Message, "requests.memory") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d events", len(evs.Items))
	})
	// Terminal: not retried, so no write after the first status.
	want := []string{"update VirtualMachineInstance", "status VirtualMachineInstance Pending"}
	if d := cmp.Diff(want, cl.writes.Writes(ns)); d != "" {
		t.Errorf("writes (-want +got):\n%s", d)
	}
}

// testControllerRestart: a controller that dies between creating the pod and
// writing the status is followed by one that adopts the pod, creates none,
// and then writes nothing more. Reconcile is called directly with uncached
// clients, in a namespace the running manager does not watch.
func testControllerRestart(t *testing.T, cl *cluster) {
	ns := cl.namespace(t, "manual")
	key := cl.createVMI(t, ns)
	opts := WithPodOptions(PodOptions{LauncherImage: "virtkit/virt-launcher:test", Emulation: true})
	req := ctrl.Request{NamespacedName: key}
	// No scheduling grace: the Scheduling write follows the pod's creation
	// in the same reconcile, and fails there.
	now := WithSchedulingGrace(0)

	dying := New(WithClient(statusFails{cl.c}, cl.c), opts, now)
	if _, err := dying.Reconcile(context.Background(), req); err == nil {
		t.Fatal("the first reconcile succeeded, want its status write to fail")
	}
	if n := len(cl.pods(t, ns)); n != 1 {
		t.Fatalf("%d pods after the first reconcile, want 1", n)
	}

	counted := &countingClient{Client: cl.c, Describe: describeWrite}
	next := New(WithClient(counted, cl.c), opts, now)
	for range 3 {
		if _, err := next.Reconcile(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(cl.pods(t, ns)); n != 1 {
		t.Errorf("%d pods after the restart, want 1", n)
	}
	if v := cl.vmi(t, key); v.Status.Phase != virtv1.Scheduling {
		t.Errorf("phase %s, want Scheduling", v.Status.Phase)
	}
	if d := cmp.Diff([]string{"status VirtualMachineInstance Scheduling"}, counted.Writes(ns)); d != "" {
		t.Errorf("writes after the restart (-want +got):\n%s", d)
	}
}

// statusFails is a client whose status writes fail, as if the process died.
type statusFails struct{ client.Client }

func (s statusFails) Status() client.SubResourceWriter { return failingStatus{} }

type failingStatus struct{ client.SubResourceWriter }

func (failingStatus) Update(context.Context, client.Object, ...client.SubResourceUpdateOption) error {
	return errors.New("killed")
}
