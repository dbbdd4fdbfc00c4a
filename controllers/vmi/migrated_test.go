package vmi

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// testMigrated: after a migration completed (the target's handler moved
// status.nodeName), the source pod that ends is not the VMI's end; the
// target pod is the VMI's pod: it is in activePods, and deleting the VMI
// deletes it and waits for it.
func testMigrated(t *testing.T, cl *cluster) {
	ctx := context.Background()
	ns := cl.namespace(t, "migrated")
	key := cl.createVMI(t, ns)
	src := cl.waitPod(t, ns)
	cl.bind(t, src, "node-a")
	vmi := cl.waitVMI(t, key, "Scheduled", func(v *virtv1.VirtualMachineInstance) bool { return v.Status.Phase == virtv1.Scheduled })

	// The handler runs it; a migration's target pod runs on node-b.
	setStatus := func(edit func(*virtv1.VirtualMachineInstanceStatus)) {
		t.Helper()
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			v := &virtv1.VirtualMachineInstance{}
			if err := cl.c.Get(ctx, key, v); err != nil {
				return err
			}
			edit(&v.Status)
			return cl.c.Status().Update(ctx, v)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	setStatus(func(st *virtv1.VirtualMachineInstanceStatus) { st.Phase = virtv1.Running })
	mig := &virtv1.VirtualMachineInstanceMigration{ObjectMeta: metav1.ObjectMeta{Name: "m1", Namespace: ns, UID: "5a5a5a5a-0000-4000-8000-000000000001"},
		Spec: virtv1.VirtualMachineInstanceMigrationSpec{VMIName: vmi.Name}}
	target, err := RenderTargetPod(vmi, mig, "node-a", PodOptions{LauncherImage: "virtkit/virt-launcher:test", Emulation: true})
	if err != nil {
		t.Fatal(err)
	}
	target.Spec.NodeName = "node-b"
	if err := cl.c.Create(ctx, target); err != nil {
		t.Fatal(err)
	}
	setStatus(func(st *virtv1.VirtualMachineInstanceStatus) {
		st.MigrationState = &virtv1.VirtualMachineInstanceMigrationState{MigrationUID: mig.UID, SourceNode: "node-a", TargetNode: "node-b",
			SourcePod: src.Name, TargetPod: target.Name}
	})
	time.Sleep(500 * time.Millisecond)
	if v := cl.vmi(t, key); v.Status.ActivePods[target.UID] != "" {
		t.Errorf("the target pod of a running migration is in activePods: %v", v.Status.ActivePods)
	}

	// Completed: the target's handler took the VMI over; the source's launcher ends.
	setStatus(func(st *virtv1.VirtualMachineInstanceStatus) {
		st.NodeName, st.MigrationState.Completed = "node-b", true
	})
	cl.podStatus(t, src, func(st *corev1.PodStatus) {
		st.Phase = corev1.PodSucceeded
		st.ContainerStatuses = []corev1.ContainerStatus{{Name: ComputeContainer, State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Message: "guest migrated away"}}}}
	})
	cl.waitVMI(t, key, "with the target pod active", func(v *virtv1.VirtualMachineInstance) bool {
		return v.Status.ActivePods[target.UID] == "node-b"
	})
	time.Sleep(time.Second)
	if v := cl.vmi(t, key); v.Status.Phase != virtv1.Running || v.Status.NodeName != "node-b" {
		t.Fatalf("after the source pod ended: phase %s on %s, reason %q", v.Status.Phase, v.Status.NodeName, v.Status.Reason)
	}

	// Deleting the VMI deletes the target pod, and the VMI waits for it.
	if err := cl.c.Delete(ctx, cl.vmi(t, key)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the target pod being deleted", func() (bool, string) {
		p := &corev1.Pod{}
		if err := cl.c.Get(ctx, client.ObjectKeyFromObject(target), p); err != nil {
			return false, err.Error()
		}
		return p.DeletionTimestamp != nil, "not deleting"
	})
	if v := cl.vmi(t, key); v == nil {
		t.Fatal("the VMI went before its pod")
	}
	// The kubelet removes the pod.
	zero := int64(0)
	if err := cl.c.Delete(ctx, target, &client.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the VMI gone", func() (bool, string) {
		v := cl.vmi(t, key)
		return v == nil, fmt.Sprint(v != nil)
	})
}
