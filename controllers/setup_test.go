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
	"github.com/virtkit/virtkit/internal/testenv/kubeenv"
	"github.com/virtkit/virtkit/virt/spec"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestFromKubeVirt(t *testing.T) {
	half := resource.MustParse("500m")
	base := controllers.Config{LauncherImage: "img", CPUModel: "base-model", MachineType: "pc-q35-8.0"}
	tests := []struct {
		name string
		kv   *virtv1.KubeVirt
		want controllers.Config
	}{
		{"no CR", nil, base},
		{"empty CR keeps the base", &virtv1.KubeVirt{}, base},
		{"developer configuration", kubevirt(virtv1.KubeVirtConfiguration{DeveloperConfiguration: &virtv1.DeveloperConfiguration{
			UseEmulation: true, MemoryOvercommit: 150, CPUAllocationRatio: 4, NodeSelectors: map[string]string{"pool": "vms"},
			FeatureGates: []string{"HostDisk"}}}),
			controllers.Config{LauncherImage: "img", CPUModel: "base-model", MachineType: "pc-q35-8.0", Emulation: true,
				MemoryOvercommit: 150, CPUAllocationRatio: 4, NodeSelector: map[string]string{"pool": "vms"}, FeatureGates: []string{"HostDisk"}}},
		{"cluster settings", kubevirt(virtv1.KubeVirtConfiguration{CPUModel: "Haswell", ImagePullPolicy: corev1.PullNever,
			CPURequest: &half, DefaultRuntimeClass: "kata", MachineType: "deprecated-q35", EmulatedMachines: []string{"deprecated*"}}),
			controllers.Config{LauncherImage: "img", CPUModel: "Haswell", MachineType: "deprecated-q35", EmulatedMachines: []string{"deprecated*"},
				ImagePullPolicy: corev1.PullNever, CPURequest: &half, RuntimeClassName: "kata"}},
		{"architecture configuration wins over the deprecated fields", kubevirt(virtv1.KubeVirtConfiguration{
			MachineType: "deprecated-q35", ArchitectureConfiguration: &virtv1.ArchConfiguration{Amd64: &virtv1.ArchSpecificConfiguration{
				MachineType: "q35", EmulatedMachines: []string{"q35*", "pc-q35*"}}}}),
			controllers.Config{LauncherImage: "img", CPUModel: "base-model", MachineType: "q35", EmulatedMachines: []string{"q35*", "pc-q35*"}}},
		{"live update limits", kubevirt(virtv1.KubeVirtConfiguration{LiveUpdateConfiguration: &virtv1.LiveUpdateConfiguration{
			MaxHotplugRatio: 2, MaxCpuSockets: ptrTo(uint32(6)), MaxGuest: &half}}),
			controllers.Config{LauncherImage: "img", CPUModel: "base-model", MachineType: "pc-q35-8.0",
				LiveUpdate: spec.LiveUpdate{Ratio: 2, MaxCPUSockets: 6, MaxGuest: &half}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.DeepEqual(t, controllers.FromKubeVirt(tc.kv, base), tc.want)
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

// The VMIs the controllers make get room to grow under LiveUpdate, the
// default, with the cluster's limits; under Stage they get none.
func TestSpecOptionsLiveUpdate(t *testing.T) {
	vmi := func(cfg controllers.Config) *virtv1.VirtualMachineInstance {
		v := &virtv1.VirtualMachineInstance{Spec: virtv1.VirtualMachineInstanceSpec{Domain: virtv1.DomainSpec{
			CPU: &virtv1.CPU{Sockets: 2}, Memory: &virtv1.Memory{Guest: ptrTo(resource.MustParse("2Gi"))}}}}
		spec.DefaultVMI(v, cfg.SpecOptions()...)
		return v
	}
	v := vmi(controllers.Config{LiveUpdate: spec.LiveUpdate{Ratio: 2}})
	assert.Equal(t, v.Spec.Domain.CPU.MaxSockets, uint32(4))
	assert.Equal(t, v.Spec.Domain.Memory.MaxGuest.String(), "4Gi")
	v = vmi(controllers.Config{VMRolloutStrategy: virtv1.VMRolloutStrategyStage})
	assert.Equal(t, v.Spec.Domain.CPU.MaxSockets, uint32(0))
	assert.Assert(t, v.Spec.Domain.Memory.MaxGuest == nil)
}

func kubevirt(c virtv1.KubeVirtConfiguration) *virtv1.KubeVirt {
	return &virtv1.KubeVirt{Spec: virtv1.KubeVirtSpec{Configuration: c}}
}

// With the KubeVirt CR asking for emulation, a VM started through the wired
// controllers gets a VMI and a launcher pod that asks for no /dev/kvm; once
// the CR stops asking, the next launcher pod asks for /dev/kvm, without a
// restart of the controllers.
func TestControllersFollowTheKubeVirtCR(t *testing.T) {
	cp := kubeenv.ControlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := cp.Client
	assert.NilError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt"}}))
	assert.NilError(t, c.Create(ctx, &virtv1.KubeVirt{
		ObjectMeta: metav1.ObjectMeta{Name: "kubevirt", Namespace: "kubevirt"},
		Spec: virtv1.KubeVirtSpec{Configuration: virtv1.KubeVirtConfiguration{
			DeveloperConfiguration: &virtv1.DeveloperConfiguration{UseEmulation: true, CPUAllocationRatio: 4},
			CPUModel:               "Haswell-noTSX"}},
	}))
	base := controllers.Config{LauncherImage: "localhost/virt-launcher:test"}
	cfg, err := controllers.ReadConfig(ctx, c, "kubevirt", base)
	assert.NilError(t, err)
	assert.Assert(t, cfg.Emulation)

	mgr, err := ctrl.NewManager(cp.Config, ctrl.Options{Scheme: c.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"}})
	assert.NilError(t, err)
	assert.NilError(t, controllers.AddToManager(mgr, base))
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
	testenv.EventuallyEvery(ctx, t, 50*time.Millisecond, "a launcher pod for the VM's VMI", func() (bool, string) {
		assert.NilError(t, c.List(ctx, &pods, client.InNamespace("default"), client.MatchingLabels{"kubevirt.io": "virt-launcher"}))
		return len(pods.Items) > 0, "no launcher pod"
	})
	pod := pods.Items[0]
	res := pod.Spec.Containers[0].Resources
	_, kvm := res.Requests["devices.kubevirt.io/kvm"]
	assert.Assert(t, !kvm, "an emulated VMI asks for no /dev/kvm: %v", res.Requests)
	mem := res.Requests[corev1.ResourceMemory]
	assert.Assert(t, mem.Cmp(resource.MustParse("300Mi")) > 0, "guest 128Mi plus the TCG overhead, got %s", mem.String())
	cpu := res.Requests[corev1.ResourceCPU]
	assert.Equal(t, cpu.String(), "250m", "one vCPU at the CR's cpuAllocationRatio 4")

	var vmi virtv1.VirtualMachineInstance
	assert.NilError(t, c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "tiny"}, &vmi))
	assert.Assert(t, vmi.Spec.Domain.CPU != nil && vmi.Spec.Domain.CPU.Model == "Haswell-noTSX",
		"the VMI gets the CR's default CPU model: %+v", vmi.Spec.Domain.CPU)

	var kv virtv1.KubeVirt
	assert.NilError(t, c.Get(ctx, client.ObjectKey{Namespace: "kubevirt", Name: "kubevirt"}, &kv))
	kv.Spec.Configuration.DeveloperConfiguration.UseEmulation = false
	assert.NilError(t, c.Update(ctx, &kv))
	second := vm.DeepCopy()
	second.ObjectMeta = metav1.ObjectMeta{Name: "second", Namespace: "default"}
	assert.NilError(t, c.Create(ctx, second))
	testenv.EventuallyEvery(ctx, t, 50*time.Millisecond, "a launcher pod for the second VM", func() (bool, string) {
		assert.NilError(t, c.List(ctx, &pods, client.InNamespace("default"), client.MatchingLabels{virtv1.DeprecatedVirtualMachineNameLabel: "second"}))
		return len(pods.Items) > 0, "no launcher pod"
	})
	res = pods.Items[0].Spec.Containers[0].Resources
	_, kvm = res.Limits["devices.kubevirt.io/kvm"]
	assert.Assert(t, kvm, "with useEmulation off the launcher asks for /dev/kvm: %+v", res)
}
