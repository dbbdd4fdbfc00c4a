package vmi_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/virtkit/virtkit/controllers/vmi"
)

// The controller runs in a controller-runtime manager; the launcher image and
// emulation are pod options.
func ExampleReconciler_SetupWithManager() {
	run := func(mgr ctrl.Manager) error {
		return vmi.New(vmi.WithPodOptions(vmi.PodOptions{
			LauncherImage: "virtkit/virt-launcher:v0.1.0",
			Emulation:     true, // the KubeVirt CR's developerConfiguration.useEmulation
		})).SetupWithManager(mgr)
	}
	_ = run
}

// RenderPod is pure: a 1 GiB, 2-vCPU VMI under KVM asks for its guest memory
// plus 64 MiB (launcher, libvirtd) + 40 MiB + 2 x 8 MiB + 1 GiB/512 (QEMU).
func ExampleRenderPod() {
	machine := &virtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "default", UID: "7c0ffee0-0000-4000-8000-000000000001"},
		Spec: virtv1.VirtualMachineInstanceSpec{Domain: virtv1.DomainSpec{
			CPU:       &virtv1.CPU{Cores: 2},
			Resources: virtv1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}},
		}},
	}
	pod, err := vmi.RenderPod(machine, vmi.PodOptions{LauncherImage: "virtkit/virt-launcher:v0.1.0", Suffix: func() string { return "x7k2q" }})
	if err != nil {
		panic(err)
	}
	c := pod.Spec.Containers[0]
	fmt.Println(pod.Name)
	fmt.Println(c.Resources.Requests.Memory(), c.Resources.Requests.Cpu(), c.Resources.Limits.Name(vmi.KVMResource, resource.DecimalSI))
	fmt.Println(c.Command)
	// Output:
	// virt-launcher-demo-x7k2q
	// 1146Mi 200m 1
	// [virt-launcher --dir /var/run/virtkit/7c0ffee0-0000-4000-8000-000000000001 --libvirt-config-dir /var/run/libvirt --namespace default --name demo --grace-period 30s]
}

// NextStatus is the phase decision on its own: a pod bound to a node moves
// a Scheduling VMI to Scheduled.
func ExampleNextStatus() {
	machine := &virtv1.VirtualMachineInstance{Status: virtv1.VirtualMachineInstanceStatus{Phase: virtv1.Scheduling}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "p1"}, Spec: corev1.PodSpec{NodeName: "node1"}}
	st := vmi.NextStatus(machine, pod, nil, metav1.Now().Time)
	fmt.Println(st.Phase, st.NodeName)
	// Output: Scheduled node1
}
