package controllers_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"gotest.tools/v3/assert"

	"github.com/virtkit/virtkit/controllers"
	"github.com/virtkit/virtkit/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestFromKubeVirt(t *testing.T) {
	base := controllers.Config{LauncherImage: "img"}
	assert.DeepEqual(t, controllers.FromKubeVirt(nil, base), base)
	kv := &virtv1.KubeVirt{Spec: virtv1.KubeVirtSpec{Configuration: virtv1.KubeVirtConfiguration{
		DeveloperConfiguration: &virtv1.DeveloperConfiguration{UseEmulation: true}}}}
	assert.DeepEqual(t, controllers.FromKubeVirt(kv, base), controllers.Config{LauncherImage: "img", Emulation: true})
}

// With the KubeVirt CR asking for emulation, a VM started through the wired
// controllers gets a VMI and a launcher pod that asks for no /dev/kvm.
func TestControllersFollowTheKubeVirtCR(t *testing.T) {
	cp := testenv.ControlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := cp.Client
	assert.NilError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt"}}))
	assert.NilError(t, c.Create(ctx, &virtv1.KubeVirt{
		ObjectMeta: metav1.ObjectMeta{Name: "kubevirt", Namespace: "kubevirt"},
		Spec: virtv1.KubeVirtSpec{Configuration: virtv1.KubeVirtConfiguration{
			DeveloperConfiguration: &virtv1.DeveloperConfiguration{UseEmulation: true}}},
	}))
	cfg, err := controllers.ReadConfig(ctx, c, "kubevirt", controllers.Config{LauncherImage: "localhost/virt-launcher:test"})
	assert.NilError(t, err)
	assert.Assert(t, cfg.Emulation)

	mgr, err := ctrl.NewManager(cp.Config, ctrl.Options{Scheme: c.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"}})
	assert.NilError(t, err)
	assert.NilError(t, controllers.AddToManager(mgr, cfg))
	mctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	defer func() { stop(); assert.NilError(t, <-done) }()

	always := virtv1.RunStrategyAlways
	vm := &virtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: "tiny", Namespace: "default"},
		Spec: virtv1.VirtualMachineSpec{RunStrategy: &always, Template: &virtv1.VirtualMachineInstanceTemplateSpec{
			Spec: virtv1.VirtualMachineInstanceSpec{
				Domain: virtv1.DomainSpec{
					Resources: virtv1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")}},
					Devices:   virtv1.Devices{Disks: []virtv1.Disk{{Name: "root", DiskDevice: virtv1.DiskDevice{Disk: &virtv1.DiskTarget{Bus: "virtio"}}}}},
				},
				Volumes: []virtv1.Volume{{Name: "root", VolumeSource: virtv1.VolumeSource{ContainerDisk: &virtv1.ContainerDiskSource{Image: "localhost/guest:1"}}}},
			},
		}},
	}
	assert.NilError(t, c.Create(ctx, vm))

	var pods corev1.PodList
	for {
		assert.NilError(t, c.List(ctx, &pods, client.InNamespace("default"), client.MatchingLabels{"kubevirt.io": "virt-launcher"}))
		if len(pods.Items) > 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("no launcher pod for the VM's VMI")
		case <-time.After(50 * time.Millisecond):
		}
	}
	pod := pods.Items[0]
	res := pod.Spec.Containers[0].Resources
	_, kvm := res.Requests["devices.kubevirt.io/kvm"]
	assert.Assert(t, !kvm, "an emulated VMI asks for no /dev/kvm: %v", res.Requests)
	mem := res.Requests[corev1.ResourceMemory]
	assert.Assert(t, mem.Cmp(resource.MustParse("300Mi")) > 0, "guest 128Mi plus the TCG overhead, got %s", mem.String())
}
