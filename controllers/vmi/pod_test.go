package vmi

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gotest.tools/v3/assert"
	"gotest.tools/v3/golden"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

var kvmOpts = PodOptions{LauncherImage: "virtkit/virt-launcher:test", Suffix: fixedSuffix}
var tcgOpts = PodOptions{LauncherImage: "virtkit/virt-launcher:test", Suffix: fixedSuffix, Emulation: true}

func q(s string) resource.Quantity { return resource.MustParse(s) }

func cpuTopology(sockets, cores, threads uint32) vmiOpt {
	return func(v *virtv1.VirtualMachineInstance) {
		v.Spec.Domain.CPU = &virtv1.CPU{Sockets: sockets, Cores: cores, Threads: threads}
	}
}

func dedicated(vcpus uint32, isolateEmulator bool) vmiOpt {
	return func(v *virtv1.VirtualMachineInstance) {
		v.Spec.Domain.CPU = &virtv1.CPU{Sockets: 1, Cores: vcpus, Threads: 1, DedicatedCPUPlacement: true, IsolateEmulatorThread: isolateEmulator}
	}
}

func hugepageSize(size string) vmiOpt {
	return func(v *virtv1.VirtualMachineInstance) {
		v.Spec.Domain.Memory = &virtv1.Memory{Hugepages: &virtv1.Hugepages{PageSize: size}}
	}
}

func resources(req, lim corev1.ResourceList) vmiOpt {
	return func(v *virtv1.VirtualMachineInstance) {
		v.Spec.Domain.Resources = virtv1.ResourceRequirements{Requests: req, Limits: lim}
	}
}

func nics(ifaces ...virtv1.Interface) vmiOpt {
	return func(v *virtv1.VirtualMachineInstance) { v.Spec.Domain.Devices.Interfaces = ifaces }
}

func TestRenderPodResources(t *testing.T) {
	// 1 GiB guest: KVM overhead = 64 + 40 + 8*vCPUs MiB + 1Gi/512 (2 MiB); TCG = 64 + 240 MiB.
	kvm, tun, vhost := KVMResource, TunResource, VhostNetResource
	tests := []struct {
		name string
		vmi  *virtv1.VirtualMachineInstance
		opts PodOptions
		want corev1.ResourceRequirements
	}{{
		name: "KVM, 1 vCPU by default",
		vmi:  newVMI(), opts: kvmOpts,
		want: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceMemory: q("1138Mi"), corev1.ResourceCPU: q("100m"), kvm: q("1")},
			Limits:   corev1.ResourceList{kvm: q("1")},
		},
	}, {
		name: "KVM, 2x2x1 topology",
		vmi:  newVMI(cpuTopology(2, 2, 1)), opts: kvmOpts,
		want: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceMemory: q("1162Mi"), corev1.ResourceCPU: q("400m"), kvm: q("1")},
			Limits:   corev1.ResourceList{kvm: q("1")},
		},
	}, {
		name: "TCG, flat overhead, no /dev/kvm",
		vmi:  newVMI(cpuTopology(4, 1, 1)), opts: tcgOpts,
		want: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceMemory: q("1328Mi"), corev1.ResourceCPU: q("400m")},
		},
	}, {
		name: "TCG, memory and cpu limits, cpu request from the VMI",
		vmi: newVMI(resources(
			corev1.ResourceList{corev1.ResourceMemory: q("512Mi"), corev1.ResourceCPU: q("1500m")},
			corev1.ResourceList{corev1.ResourceMemory: q("1Gi"), corev1.ResourceCPU: q("2")})),
		opts: tcgOpts,
		want: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceMemory: q("816Mi"), corev1.ResourceCPU: q("1500m")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: q("1328Mi"), corev1.ResourceCPU: q("2")},
		},
	}, {
		name: "KVM, a virtio NIC: tun and vhost-net",
		vmi:  newVMI(nics(virtv1.Interface{Name: "default"})), opts: kvmOpts,
		want: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceMemory: q("1138Mi"), corev1.ResourceCPU: q("100m"), kvm: q("1"), tun: q("1"), vhost: q("1")},
			Limits:   corev1.ResourceList{kvm: q("1"), tun: q("1"), vhost: q("1")},
		},
	}, {
		name: "KVM, an e1000 NIC: tun only",
		vmi:  newVMI(nics(virtv1.Interface{Name: "default", Model: "e1000"})), opts: kvmOpts,
		want: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceMemory: q("1138Mi"), corev1.ResourceCPU: q("100m"), kvm: q("1"), tun: q("1")},
			Limits:   corev1.ResourceList{kvm: q("1"), tun: q("1")},
		},
	}, {
		name: "TCG, a virtio NIC: tun only (no vhost-net without KVM)",
		vmi:  newVMI(nics(virtv1.Interface{Name: "default", Model: "virtio"})), opts: tcgOpts,
		want: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceMemory: q("1328Mi"), corev1.ResourceCPU: q("100m"), tun: q("1")},
			Limits:   corev1.ResourceList{tun: q("1")},
		},
	}, {
		name: "memory.guest without requests",
		vmi: newVMI(resources(nil, nil), func(v *virtv1.VirtualMachineInstance) {
			g := q("2Gi")
			v.Spec.Domain.Memory = &virtv1.Memory{Guest: &g}
		}),
		opts: tcgOpts,
		want: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceMemory: q("2352Mi"), corev1.ResourceCPU: q("100m")},
		},
	}, {
		name: "KVM, dedicated CPUs with the emulator thread isolated: Guaranteed, whole CPUs",
		vmi:  newVMI(dedicated(2, true)), opts: kvmOpts,
		want: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceMemory: q("1146Mi"), corev1.ResourceCPU: q("3"), kvm: q("1")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: q("1146Mi"), corev1.ResourceCPU: q("3"), kvm: q("1")},
		},
	}, {
		name: "TCG, 2 MiB hugepages: the guest's memory as hugepages, the overhead as memory",
		vmi:  newVMI(hugepageSize("2048Ki")), opts: tcgOpts,
		want: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceMemory: q("304Mi"), corev1.ResourceCPU: q("100m"), "hugepages-2Mi": q("1Gi")},
			Limits:   corev1.ResourceList{"hugepages-2Mi": q("1Gi")},
		},
	}, {
		name: "KVM, 1 GiB hugepages and dedicated CPUs",
		vmi:  newVMI(hugepageSize("1Gi"), dedicated(1, false)), opts: kvmOpts,
		want: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceMemory: q("114Mi"), corev1.ResourceCPU: q("1"), "hugepages-1Gi": q("1Gi"), kvm: q("1")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: q("114Mi"), corev1.ResourceCPU: q("1"), "hugepages-1Gi": q("1Gi"), kvm: q("1")},
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod, err := RenderPod(tc.vmi, tc.opts)
			assert.NilError(t, err)
			got := pod.Spec.Containers[0].Resources
			if d := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); d != "" {
				t.Errorf("resources (-want +got):\n%s", d)
			}
		})
	}
}

func TestMemoryOverhead(t *testing.T) {
	tests := []struct {
		guest     string
		vcpus     int64
		emulation bool
		want      string
	}{
		{"1Gi", 1, false, "114Mi"},
		{"4Gi", 4, false, "144Mi"},
		{"64Mi", 1, false, "112Mi"}, // + 64Mi/512 = 128Ki
		{"1Gi", 1, true, "304Mi"},
		{"64Gi", 32, true, "304Mi"},
	}
	for _, tc := range tests {
		got := MemoryOverhead(q(tc.guest), tc.vcpus, tc.emulation)
		want := q(tc.want)
		if tc.guest == "64Mi" {
			want.Add(q("128Ki"))
		}
		if got.Cmp(want) != 0 {
			t.Errorf("MemoryOverhead(%s, %d, %v) = %s, want %s", tc.guest, tc.vcpus, tc.emulation, got.String(), want.String())
		}
	}
}

func TestRenderPodErrors(t *testing.T) {
	tests := []struct {
		name string
		vmi  *virtv1.VirtualMachineInstance
		want string
	}{
		{"no memory", newVMI(resources(nil, nil)), "spec.domain.memory.guest or spec.domain.resources.requests.memory must be set"},
		{"no uid", newVMI(func(v *virtv1.VirtualMachineInstance) { v.UID = "" }), "metadata.uid"},
		{"containerDisk without image", newVMI(func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Volumes = []virtv1.Volume{{Name: "d", VolumeSource: virtv1.VolumeSource{ContainerDisk: &virtv1.ContainerDiskSource{}}}}
		}), "spec.volumes[0].containerDisk.image"},
		{"hostDisk of a folder", newVMI(func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Volumes = []virtv1.Volume{{Name: "h", VolumeSource: virtv1.VolumeSource{HostDisk: &virtv1.HostDisk{Path: "/var/..", Type: virtv1.HostDiskExists}}}}
		}), `spec.volumes[0].hostDisk.path: "/var/.." is not an absolute path of a file`},
		{"hugepages of no size", newVMI(hugepageSize("big")), `spec.domain.memory.hugepages.pageSize: want a hugepage size such as 2Mi or 1Gi, got "big"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := RenderPod(tc.vmi, kvmOpts)
			assert.ErrorContains(t, err, tc.want)
			assert.Assert(t, errors.Is(err, ErrInvalidVMI))
		})
	}
	_, err := RenderPod(newVMI(), PodOptions{})
	assert.ErrorContains(t, err, "LauncherImage")
}

func TestRenderPodShape(t *testing.T) {
	grace := int64(60)
	vmi := newVMI(func(v *virtv1.VirtualMachineInstance) {
		// The identity labels are the pod's own; those that tie a pod to a
		// migration or a node are never copied (a forged migrationJobUID
		// would make it pass for another VMI's migration target).
		v.Labels = map[string]string{"app": "demo", virtv1.AppLabel: "overridden", virtv1.CreatedByLabel: "forged",
			virtv1.MigrationJobLabel: "forged", virtv1.MigrationSelectorLabel: "forged", virtv1.NodeNameLabel: "forged"}
		v.Spec.TerminationGracePeriodSeconds = &grace
		v.Spec.NodeSelector = map[string]string{"zone": "a"}
		v.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}}
		v.Spec.SchedulerName = "my-scheduler"
		v.Spec.PriorityClassName = "high"
		v.Spec.Hostname = "host"
		v.Spec.Subdomain = "sub"
		v.Spec.DNSPolicy = corev1.DNSNone
		v.Spec.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"10.0.0.10"}}
		v.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}}
	})
	pod, err := RenderPod(vmi, kvmOpts)
	assert.NilError(t, err)
	yes := true
	dir := "/var/run/virtkit/" + testUID

	assert.Equal(t, pod.Name, "virt-launcher-vmi1-abcde")
	assert.DeepEqual(t, pod.Labels, map[string]string{"app": "demo", "kubevirt.io": "virt-launcher",
		"kubevirt.io/created-by": testUID, "vm.kubevirt.io/name": "vmi1", "vmi.kubevirt.io/id": "vmi1"})
	assert.DeepEqual(t, pod.Annotations, map[string]string{"kubevirt.io/domain": "vmi1"})
	assert.DeepEqual(t, pod.OwnerReferences, []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstance",
		Name: "vmi1", UID: testUID, Controller: &yes, BlockOwnerDeletion: &yes}})
	assert.DeepEqual(t, pod.Spec.NodeSelector, map[string]string{"zone": "a", "kubevirt.io/schedulable": "true"})
	assert.DeepEqual(t, pod.Spec.Tolerations, vmi.Spec.Tolerations)
	assert.DeepEqual(t, pod.Spec.Affinity, vmi.Spec.Affinity)
	assert.DeepEqual(t, pod.Spec.DNSConfig, vmi.Spec.DNSConfig)
	assert.Equal(t, pod.Spec.DNSPolicy, corev1.DNSNone)
	assert.Equal(t, pod.Spec.SchedulerName, "my-scheduler")
	assert.Equal(t, pod.Spec.PriorityClassName, "high")
	assert.Equal(t, pod.Spec.Hostname, "host")
	assert.Equal(t, pod.Spec.Subdomain, "sub")
	assert.Equal(t, *pod.Spec.TerminationGracePeriodSeconds, int64(75))
	assert.Equal(t, pod.Spec.RestartPolicy, corev1.RestartPolicyNever)
	c := pod.Spec.Containers[0]
	assert.DeepEqual(t, c.Command, []string{"virt-launcher", "--dir", dir, "--libvirt-config-dir", "/var/run/libvirt", "--namespace", "default", "--name", "vmi1", "--grace-period", "60s"})
	assert.DeepEqual(t, c.ReadinessProbe.Exec.Command, []string{"test", "-f", dir + "/ready"})
	assert.Assert(t, pod.Spec.Volumes[0].EmptyDir != nil && pod.Spec.Volumes[0].HostPath == nil, "the pod's folder is its own emptyDir")
	assert.Equal(t, PodFolder("/var/lib/kubelet/pods", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "p1"}}),
		"/var/lib/kubelet/pods/p1/volumes/kubernetes.io~empty-dir/"+pod.Spec.Volumes[0].Name)
	assert.DeepEqual(t, c.VolumeMounts[0].MountPath, dir)
	// libvirt's configuration folder, short for the sockets below it, is
	// the pod's own too.
	assert.DeepEqual(t, pod.Spec.Volumes[1], corev1.Volume{Name: "virtkit-libvirt", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	assert.DeepEqual(t, c.VolumeMounts[1], corev1.VolumeMount{Name: "virtkit-libvirt", MountPath: "/var/run/libvirt"})
	assert.Assert(t, len(dir+"/libvirt/run/libvirt-sock") < 108)

	// Hostname defaults to the VMI's name; the grace period to 30 s.
	pod, err = RenderPod(newVMI(), kvmOpts)
	assert.NilError(t, err)
	assert.Equal(t, pod.Spec.Hostname, "vmi1")
	assert.Equal(t, *pod.Spec.TerminationGracePeriodSeconds, int64(45))
	assert.Equal(t, pod.Spec.Containers[0].Command[len(pod.Spec.Containers[0].Command)-1], "30s")
}

// TestRenderPodCapabilitiesCache: a node's shared capability cache is a
// hostPath volume and the launcher's --libvirt-cache-dir.
// A VMI with hugepages gets a hugetlbfs at /dev/hugepages, where the
// launcher's libvirt finds it.
func TestRenderPodHugepagesVolume(t *testing.T) {
	pod, err := RenderPod(newVMI(hugepageSize("2Mi")), tcgOpts)
	assert.NilError(t, err)
	var vol *corev1.Volume
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Name == "hugepages" {
			vol = &pod.Spec.Volumes[i]
		}
	}
	assert.Assert(t, vol != nil && vol.EmptyDir != nil && vol.EmptyDir.Medium == corev1.StorageMediumHugePages, "volumes: %+v", pod.Spec.Volumes)
	assert.Assert(t, slices.ContainsFunc(pod.Spec.Containers[0].VolumeMounts, func(m corev1.VolumeMount) bool {
		return m.Name == "hugepages" && m.MountPath == "/dev/hugepages"
	}),
		"mounts: %+v", pod.Spec.Containers[0].VolumeMounts)
}

func TestRenderPodCapabilitiesCache(t *testing.T) {
	opts := kvmOpts
	opts.CapabilitiesCache = "/var/lib/virt-local/cache/libvirt"
	pod, err := RenderPod(newVMI(), opts)
	assert.NilError(t, err)
	dirType := corev1.HostPathDirectoryOrCreate
	vols := pod.Spec.Volumes
	assert.DeepEqual(t, vols[len(vols)-1], corev1.Volume{Name: "virtkit-libvirt-cache", VolumeSource: corev1.VolumeSource{
		HostPath: &corev1.HostPathVolumeSource{Path: "/var/lib/virt-local/cache/libvirt", Type: &dirType}}})
	c := pod.Spec.Containers[0]
	assert.DeepEqual(t, c.VolumeMounts[len(c.VolumeMounts)-1], corev1.VolumeMount{Name: "virtkit-libvirt-cache", MountPath: "/var/cache/virtkit/libvirt"})
	assert.DeepEqual(t, c.Command[len(c.Command)-2:], []string{"--libvirt-cache-dir", "/var/cache/virtkit/libvirt"})
}

// A VMI on secondary networks asks the cluster's Multus for them, as
// KubeVirt's launcher pods do; one on the pod network alone does not.
func TestRenderPodMultusNetworks(t *testing.T) {
	pod, err := RenderPod(newVMI(), kvmOpts)
	assert.NilError(t, err)
	_, has := pod.Annotations["k8s.v1.cni.cncf.io/networks"]
	assert.Assert(t, !has, "a pod network VMI asks for networks: %v", pod.Annotations)

	pod, err = RenderPod(newVMI(func(v *virtv1.VirtualMachineInstance) {
		v.Spec.Networks = []virtv1.Network{{Name: "default", NetworkSource: virtv1.NetworkSource{Pod: &virtv1.PodNetwork{}}},
			{Name: "storage", NetworkSource: virtv1.NetworkSource{Multus: &virtv1.MultusNetwork{NetworkName: "infra/storage-net"}}}}
		v.Spec.Domain.Devices.Interfaces = append(v.Spec.Domain.Devices.Interfaces, virtv1.Interface{Name: "storage",
			InterfaceBindingMethod: virtv1.InterfaceBindingMethod{Bridge: &virtv1.InterfaceBridge{}}})
	}), kvmOpts)
	assert.NilError(t, err)
	assert.Equal(t, pod.Annotations["k8s.v1.cni.cncf.io/networks"], `[{"name":"storage-net","namespace":"infra","interface":"pod49a25f9feef"}]`)
}

func TestRenderPodVolumes(t *testing.T) {
	f := false
	dir, dirOrCreate := corev1.HostPathDirectory, corev1.HostPathDirectoryOrCreate
	vmi := newVMI(withVolumes())
	pod, err := RenderPod(vmi, kvmOpts)
	assert.NilError(t, err)
	wantVols := []corev1.Volume{
		{Name: "rootdisk", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "quay.io/containerdisks/fedora:41", PullPolicy: corev1.PullIfNotPresent}}},
		{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-pvc"}}},
		{Name: "dv", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "dv1"}}},
		{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm1"}}}},
		{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s1", Optional: &f}}},
		{Name: "down", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}},
		{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/lib/vm-disks", Type: &dir}}},
		{Name: "hostnew", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/lib/vm-disks/new", Type: &dirOrCreate}}},
	}
	assert.DeepEqual(t, pod.Spec.Volumes[3:], wantVols)
	wantMounts := []corev1.VolumeMount{
		{Name: "rootdisk", MountPath: "/var/run/kubevirt/container-disks/rootdisk", ReadOnly: true},
		{Name: "data", MountPath: "/var/run/kubevirt-private/vmi-disks/data"},
		{Name: "dv", MountPath: "/var/run/kubevirt-private/vmi-disks/dv"},
		{Name: "cfg", MountPath: "/var/run/kubevirt-private/config-map-disks/cfg", ReadOnly: true},
		{Name: "sec", MountPath: "/var/run/kubevirt-private/secret-disks/sec", ReadOnly: true},
		{Name: "down", MountPath: "/var/run/kubevirt-private/downwardapi-disks/down", ReadOnly: true},
		{Name: "host", MountPath: "/var/run/kubevirt-private/vmi-disks/host"},
		{Name: "hostnew", MountPath: "/var/run/kubevirt-private/vmi-disks/hostnew"},
	}
	assert.DeepEqual(t, pod.Spec.Containers[0].VolumeMounts[3:], wantMounts)
	assert.Equal(t, pod.Spec.ServiceAccountName, "sa1")
	assert.Equal(t, *pod.Spec.AutomountServiceAccountToken, true)

	pod, err = RenderPod(newVMI(), kvmOpts)
	assert.NilError(t, err)
	assert.Equal(t, *pod.Spec.AutomountServiceAccountToken, false)
}

// Claims in Block mode are devices of the compute container at
// /dev/<volume>, as KubeVirt's launcher has them, with their pod volumes;
// the others stay mounts.
func TestRenderPodBlockVolumes(t *testing.T) {
	opts := kvmOpts
	opts.BlockVolumes = map[string]bool{"data": true, "dv": true}
	pod, err := RenderPod(newVMI(withVolumes()), opts)
	assert.NilError(t, err)
	c := pod.Spec.Containers[0]
	assert.DeepEqual(t, c.VolumeDevices, []corev1.VolumeDevice{{Name: "data", DevicePath: "/dev/data"}, {Name: "dv", DevicePath: "/dev/dv"}})
	for _, m := range c.VolumeMounts {
		if m.Name == "data" || m.Name == "dv" {
			t.Errorf("block volume %q is also mounted at %s", m.Name, m.MountPath)
		}
	}
	claims := map[string]string{}
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			claims[v.Name] = v.PersistentVolumeClaim.ClaimName
		}
	}
	assert.DeepEqual(t, claims, map[string]string{"data": "data-pvc", "dv": "dv1"})
}

// withVolumes gives the VMI one volume of each kind RenderPod maps, and a cloud-init disk it does not.
func withVolumes() vmiOpt {
	f := false
	return func(v *virtv1.VirtualMachineInstance) {
		v.Spec.Volumes = []virtv1.Volume{
			{Name: "rootdisk", VolumeSource: virtv1.VolumeSource{ContainerDisk: &virtv1.ContainerDiskSource{Image: "quay.io/containerdisks/fedora:41", ImagePullPolicy: corev1.PullIfNotPresent}}},
			{Name: "data", VolumeSource: virtv1.VolumeSource{PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-pvc"}}}},
			{Name: "dv", VolumeSource: virtv1.VolumeSource{DataVolume: &virtv1.DataVolumeSource{Name: "dv1"}}},
			{Name: "cfg", VolumeSource: virtv1.VolumeSource{ConfigMap: &virtv1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm1"}}}},
			{Name: "sec", VolumeSource: virtv1.VolumeSource{Secret: &virtv1.SecretVolumeSource{SecretName: "s1", Optional: &f}}},
			{Name: "down", VolumeSource: virtv1.VolumeSource{DownwardAPI: &virtv1.DownwardAPIVolumeSource{Fields: []corev1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}},
			{Name: "sa", VolumeSource: virtv1.VolumeSource{ServiceAccount: &virtv1.ServiceAccountVolumeSource{ServiceAccountName: "sa1"}}},
			{Name: "cloudinit", VolumeSource: virtv1.VolumeSource{CloudInitNoCloud: &virtv1.CloudInitNoCloudSource{UserData: "#cloud-config\n"}}},
			{Name: "host", VolumeSource: virtv1.VolumeSource{HostDisk: &virtv1.HostDisk{Path: "/var/lib/vm-disks/host.img", Type: virtv1.HostDiskExists}}},
			{Name: "hostnew", VolumeSource: virtv1.VolumeSource{HostDisk: &virtv1.HostDisk{Path: "/var/lib/vm-disks/new/disk.img", Type: virtv1.HostDiskExistsOrCreate}}},
		}
	}
}

// TestRenderPodGolden renders a typical VMI (a containerDisk, a PVC, cloud-init,
// 2 vCPUs, 2 GiB, emulation) and compares it with testdata/typical-pod.yaml;
// regenerate with go test -update.
func TestRenderPodGolden(t *testing.T) {
	vmi := newVMI(withVolumes(), cpuTopology(1, 2, 1), resources(corev1.ResourceList{corev1.ResourceMemory: q("2Gi")}, nil),
		func(v *virtv1.VirtualMachineInstance) {
			v.Name = "fedora"
			v.Namespace = "demo"
			v.Labels = map[string]string{"app": "fedora"}
			v.Spec.Volumes = append(v.Spec.Volumes[:2], v.Spec.Volumes[7])
		})
	pod, err := RenderPod(vmi, PodOptions{LauncherImage: "virtkit/virt-launcher:v0.1.0", LauncherPullPolicy: corev1.PullIfNotPresent,
		Emulation: true, Suffix: fixedSuffix})
	assert.NilError(t, err)
	b, err := yaml.Marshal(pod)
	assert.NilError(t, err)
	golden.Assert(t, string(b), "typical-pod.yaml")
}

// TestRenderPodCloudInitSecrets: the secrets cloud-init volumes name are
// secret volumes of the pod, mounted read-only where the handler reads
// them (it has no access to Secrets of its own), named as KubeVirt names
// them; inline data needs none.
func TestRenderPodCloudInitSecrets(t *testing.T) {
	ref := func(n string) *corev1.LocalObjectReference { return &corev1.LocalObjectReference{Name: n} }
	vmi := newVMI(func(v *virtv1.VirtualMachineInstance) {
		v.Spec.Volumes = []virtv1.Volume{
			{Name: "ci", VolumeSource: virtv1.VolumeSource{CloudInitNoCloud: &virtv1.CloudInitNoCloudSource{UserDataSecretRef: ref("user"), NetworkDataSecretRef: ref("net")}}},
			{Name: "cd", VolumeSource: virtv1.VolumeSource{CloudInitConfigDrive: &virtv1.CloudInitConfigDriveSource{UserDataSecretRef: ref("user")}}},
			{Name: "inline", VolumeSource: virtv1.VolumeSource{CloudInitNoCloud: &virtv1.CloudInitNoCloudSource{UserData: "#cloud-config\n"}}},
		}
	})
	pod, err := RenderPod(vmi, kvmOpts)
	assert.NilError(t, err)
	secret := func(name, of string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: of}}}
	}
	assert.DeepEqual(t, pod.Spec.Volumes[3:], []corev1.Volume{secret("ci-udata", "user"), secret("ci-ndata", "net"), secret("cd-udata", "user")})
	assert.DeepEqual(t, pod.Spec.Containers[0].VolumeMounts[3:], []corev1.VolumeMount{
		{Name: "ci-udata", MountPath: "/var/run/kubevirt-private/secret/ci/userdata", ReadOnly: true},
		{Name: "ci-ndata", MountPath: "/var/run/kubevirt-private/secret/ci/networkdata", ReadOnly: true},
		{Name: "cd-udata", MountPath: "/var/run/kubevirt-private/secret/cd/userdata", ReadOnly: true},
	})
}

// Each access credential's Secret is mounted once, where the handler
// reads it to set it through the guest agent.
func TestRenderPodAccessCredentials(t *testing.T) {
	secret := func(n string) *virtv1.AccessCredentialSecretSource {
		return &virtv1.AccessCredentialSecretSource{SecretName: n}
	}
	vmi := newVMI(func(v *virtv1.VirtualMachineInstance) {
		v.Spec.AccessCredentials = []virtv1.AccessCredential{
			{SSHPublicKey: &virtv1.SSHPublicKeyAccessCredential{Source: virtv1.SSHPublicKeyAccessCredentialSource{Secret: secret("keys")}}},
			{UserPassword: &virtv1.UserPasswordAccessCredential{Source: virtv1.UserPasswordAccessCredentialSource{Secret: secret("pw")}}},
			{SSHPublicKey: &virtv1.SSHPublicKeyAccessCredential{Source: virtv1.SSHPublicKeyAccessCredentialSource{Secret: secret("keys")}}},
		}
	})
	pod, err := RenderPod(vmi, kvmOpts)
	assert.NilError(t, err)
	assert.DeepEqual(t, pod.Spec.Volumes[3:], []corev1.Volume{
		{Name: "keys-access-cred", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "keys"}}},
		{Name: "pw-access-cred", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "pw"}}},
	})
	assert.DeepEqual(t, pod.Spec.Containers[0].VolumeMounts[3:], []corev1.VolumeMount{
		{Name: "keys-access-cred", MountPath: "/var/run/kubevirt-private/secret/keys-access-cred", ReadOnly: true},
		{Name: "pw-access-cred", MountPath: "/var/run/kubevirt-private/secret/pw-access-cred", ReadOnly: true},
	})
}

// A VMI with persistent EFI and TPM mounts its backend-storage claim's
// folders where the launcher's libvirt keeps that state, after the
// configuration folder they sit in; one without a known claim is not
// rendered.
func TestRenderPodBackendStorage(t *testing.T) {
	persistent := func(v *virtv1.VirtualMachineInstance) {
		yes, no := true, false
		v.Spec.Domain.Firmware = &virtv1.Firmware{Bootloader: &virtv1.Bootloader{EFI: &virtv1.EFI{SecureBoot: &no, Persistent: &yes}}}
		v.Spec.Domain.Devices.TPM = &virtv1.TPMDevice{Persistent: &yes}
	}
	_, err := RenderPod(newVMI(persistent), tcgOpts)
	assert.ErrorContains(t, err, "backend-storage claim")

	opts := tcgOpts
	opts.StateClaim = "persistent-state-for-vmi1-x7k2p"
	pod, err := RenderPod(newVMI(persistent), opts)
	assert.NilError(t, err)
	assert.Assert(t, slices.ContainsFunc(pod.Spec.Volumes, func(v corev1.Volume) bool {
		return v.Name == "vm-state" && v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == opts.StateClaim
	}), "volumes: %+v", pod.Spec.Volumes)
	var got []corev1.VolumeMount
	config := -1
	for i, m := range pod.Spec.Containers[0].VolumeMounts {
		if strings.HasPrefix(m.Name, "vm-state") {
			got = append(got, m)
			assert.Assert(t, config >= 0 && config < i, "vm-state mounted before the configuration folder: %+v", pod.Spec.Containers[0].VolumeMounts)
		}
		if m.MountPath == "/var/run/libvirt" {
			config = i
		}
	}
	assert.DeepEqual(t, got, []corev1.VolumeMount{
		{Name: "vm-state-libvirt", MountPath: "/var/run/libvirt/libvirt"},
		{Name: "vm-state-libvirt-qemu", MountPath: "/var/run/libvirt/libvirt/qemu"},
		{Name: "vm-state", MountPath: "/var/run/libvirt/libvirt/qemu/swtpm", SubPath: "swtpm"},
		{Name: "vm-state", MountPath: "/var/run/libvirt/swtpm-localca", SubPath: "swtpm-localca"},
		{Name: "vm-state", MountPath: "/var/run/libvirt/libvirt/qemu/nvram", SubPath: "nvram"},
	})

	plain, err := RenderPod(newVMI(), opts)
	assert.NilError(t, err)
	assert.Assert(t, !slices.ContainsFunc(plain.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == "vm-state" }), "a VMI without persistent state got the claim")
}
