package vmi

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	virtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/virtkit/virtkit/internal/scheme"
	"github.com/virtkit/virtkit/virt/launcher/contract"
)

// Each failure a user must act on gives one Warning when the status first
// says it, none while it keeps saying it.
func TestStatusWarnings(t *testing.T) {
	withStatus := func(v *virtv1.VirtualMachineInstance, pod *corev1.Pod) vmiOpt {
		return func(x *virtv1.VirtualMachineInstance) { x.Status = NextStatus(v, pod, nil, t0) }
	}
	scheduled := func(v *virtv1.VirtualMachineInstance) { v.Status.Phase, v.Status.NodeName = virtv1.Scheduled, "n1" }
	pullErr := newPod(onNode("n1"), imageWaiting(ReasonErrImagePull, `image "no/such:1" not found`))
	backOff := newPod(onNode("n1"), imageWaiting(ReasonImagePullBackOff, `Back-off pulling image "no/such:1"`))
	noNode := newPod(unschedulable(`0/1 nodes are available: persistentvolumeclaim "data" not found.`))
	crashed := newPod(onNode("n1"), computeExited(contract.ExitSetupFailed, "libvirtd: cannot bind socket"))
	tests := []struct {
		name string
		vmi  *virtv1.VirtualMachineInstance
		pod  *corev1.Pod
		want []Warning
	}{
		{"the image cannot be pulled", newVMI(scheduled), pullErr,
			[]Warning{{ReasonErrImagePull, `image "no/such:1" not found`}}},
		{"still cannot: the kubelet backs off", newVMI(scheduled, withStatus(newVMI(scheduled), pullErr)), backOff, nil},
		{"the pod cannot be scheduled", newVMI(phase(virtv1.Scheduling)), noNode,
			[]Warning{{corev1.PodReasonUnschedulable, `the launcher pod cannot be scheduled: 0/1 nodes are available: persistentvolumeclaim "data" not found.`}}},
		{"still cannot", newVMI(phase(virtv1.Scheduling), withStatus(newVMI(phase(virtv1.Scheduling)), noNode)), noNode, nil},
		{"the launcher failed", newVMI(scheduled), crashed,
			[]Warning{{ReasonLauncherSetupFailed, "the VirtualMachineInstance failed: libvirtd: cannot bind socket"}}},
		{"nothing wrong", newVMI(phase(virtv1.Scheduling)), newPod(onNode("n1")), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := StatusWarnings(tc.vmi, NextStatus(tc.vmi, tc.pod, nil, t0))
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("StatusWarnings (-want +got):\n%s", d)
			}
		})
	}
}

// The controller records the warning on the VMI once, with the status
// write that says it.
func TestImagePullWarningRecordedOnce(t *testing.T) {
	vmi := newVMI(finalized(), func(v *virtv1.VirtualMachineInstance) {
		v.Status.Phase, v.Status.NodeName = virtv1.Scheduled, "n1"
		v.Status.ActivePods = map[types.UID]string{"pod-uid": "n1"}
	})
	pod := newPod(onNode("n1"), imageWaiting(ReasonErrImagePull, `image "no/such:1" not found`))
	pod.Labels = map[string]string{virtv1.CreatedByLabel: string(vmi.UID)}
	isController := true
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstance", Name: vmi.Name, UID: vmi.UID, Controller: &isController}}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithStatusSubresource(&virtv1.VirtualMachineInstance{}).WithObjects(vmi, pod).Build()
	rec := record.NewFakeRecorder(10)
	r := New(WithClient(c, c), WithEventRecorder(rec), WithClock(clocktesting.NewFakeClock(t0)),
		WithPodOptions(PodOptions{LauncherImage: "virt-launcher:test"}))
	for range 2 {
		if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(vmi)}); err != nil {
			t.Fatal(err)
		}
	}
	close(rec.Events)
	var got []string
	for e := range rec.Events {
		got = append(got, e)
	}
	if d := cmp.Diff([]string{`Warning ErrImagePull image "no/such:1" not found`}, got); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
}
