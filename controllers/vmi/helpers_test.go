package vmi

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
)

// t0 is the fixed "now" of the unit tests.
var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

const testUID = "0c1f6a2e-7d5b-4e36-9a51-2b8f0d4c9e17"

type vmiOpt func(*virtv1.VirtualMachineInstance)

// newVMI is a small VMI: 1 GiB guest, no CPU topology, no volumes.
func newVMI(opts ...vmiOpt) *virtv1.VirtualMachineInstance {
	vmi := &virtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Name: "vmi1", Namespace: "default", UID: testUID},
		Spec: virtv1.VirtualMachineInstanceSpec{Domain: virtv1.DomainSpec{
			Resources: virtv1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}},
		}},
	}
	for _, o := range opts {
		o(vmi)
	}
	return vmi
}

func phase(p virtv1.VirtualMachineInstancePhase) vmiOpt {
	return func(v *virtv1.VirtualMachineInstance) { v.Status.Phase = p }
}

func finalized() vmiOpt {
	return func(v *virtv1.VirtualMachineInstance) { v.Finalizers = append(v.Finalizers, Finalizer) }
}

func vmiDeleting() vmiOpt {
	return func(v *virtv1.VirtualMachineInstance) { ts := metav1.NewTime(t0); v.DeletionTimestamp = &ts }
}

type podOpt func(*corev1.Pod)

func newPod(opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "virt-launcher-vmi1-abcde", Namespace: "default", UID: "pod-uid"}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func onNode(n string) podOpt { return func(p *corev1.Pod) { p.Spec.NodeName = n } }

func podDeleting() podOpt {
	return func(p *corev1.Pod) { ts := metav1.NewTime(t0); p.DeletionTimestamp = &ts }
}

func unschedulable(msg string) podOpt {
	return func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled,
			Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: msg, LastTransitionTime: metav1.NewTime(t0)})
	}
}

func computeExited(code int32, msg string) podOpt {
	return func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodFailed
		if code == 0 {
			p.Status.Phase = corev1.PodSucceeded
		}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ComputeContainer,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: "Error", Message: msg}}}}
	}
}

func fixedSuffix() string { return "abcde" }

// imageWaiting: the compute container waits for its image, as the kubelet says.
func imageWaiting(reason, msg string) podOpt {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ComputeContainer,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}}
	}
}
