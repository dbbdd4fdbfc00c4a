package vmi

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"gotest.tools/v3/assert"
	"gotest.tools/v3/golden"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/virtkit/virtkit/virt/launcher/contract"
)

func hotVolume(name, claim string) virtv1.Volume {
	return virtv1.Volume{Name: name, VolumeSource: virtv1.VolumeSource{PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{
		PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}, Hotpluggable: true}}}
}

func withHotplug(names ...string) vmiOpt {
	return func(v *virtv1.VirtualMachineInstance) {
		for _, n := range names {
			v.Spec.Volumes = append(v.Spec.Volumes, hotVolume(n, n+"-claim"))
			v.Spec.Domain.Devices.Disks = append(v.Spec.Domain.Devices.Disks, virtv1.Disk{Name: n})
		}
	}
}

// TestAttachPodGolden renders the attachment pod of a filesystem claim
// (testdata/attach-pod.yaml; regenerate with go test -update) and checks
// that a block claim gets a device instead of a mount, made in an emptyDir.
func TestAttachPodGolden(t *testing.T) {
	vmi := newVMI(withHotplug("data"), phase(virtv1.Running))
	launcher := newPod(onNode("node-a"), func(p *corev1.Pod) {
		p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "vms", Effect: corev1.TaintEffectNoSchedule}}
	})
	pod, err := AttachPodFor(vmi, launcher, &vmi.Spec.Volumes[0], false, tcgOpts)
	assert.NilError(t, err)
	b, err := yaml.Marshal(pod)
	assert.NilError(t, err)
	golden.Assert(t, string(b), "attach-pod.yaml")
	assert.Equal(t, AttachedVolume(pod), "data")
	assert.Equal(t, pod.Name, AttachPodName(launcher.UID, "data"))
	assert.Assert(t, AttachPodName(launcher.UID, "other") != pod.Name && AttachPodName("other-launcher", "data") != pod.Name)
	assert.Assert(t, metav1.IsControlledBy(pod, launcher))

	block, err := AttachPodFor(vmi, launcher, &vmi.Spec.Volumes[0], true, tcgOpts)
	assert.NilError(t, err)
	c := block.Spec.Containers[0]
	if d := cmp.Diff([]corev1.VolumeDevice{{Name: "data", DevicePath: "/path/data"}}, c.VolumeDevices); d != "" {
		t.Errorf("block claim: devices (-want +got):\n%s", d)
	}
	// The device's folder is an emptyDir, where the runtime makes the node
	// and the handler finds it on the node.
	if d := cmp.Diff([]corev1.VolumeMount{{Name: contract.HotplugDeviceVolume, MountPath: "/path"}}, c.VolumeMounts); d != "" {
		t.Errorf("block claim: mounts (-want +got):\n%s", d)
	}
	if v := block.Spec.Volumes; len(v) != 2 || v[1].Name != contract.HotplugDeviceVolume || v[1].EmptyDir == nil {
		t.Errorf("block claim: pod volumes %+v, want the claim and the emptyDir %s", v, contract.HotplugDeviceVolume)
	}
	assert.Equal(t, AttachedVolume(block), "data")

	_, err = AttachPodFor(vmi, newPod(), &vmi.Spec.Volumes[0], false, tcgOpts)
	assert.ErrorContains(t, err, "not on a node yet")
}

// PlanAttachPods: a running VMI's hotpluggable volumes with disks get one
// pod each; a pod goes once its volume left the spec and the handler no
// longer reports it, when it belongs to a former launcher pod the handler
// let go of (the status names another pod, or none), and when the VMI is
// final. A running migration's target pods are left alone; a failed one's go.
func TestPlanAttachPods(t *testing.T) {
	launcher := newPod(onNode("node-a"))
	other := newPod(onNode("node-b"), func(p *corev1.Pod) { p.UID = "old-launcher" })
	vmi := newVMI(withHotplug("a", "b"), phase(virtv1.Running))
	pod := func(owner *corev1.Pod, vol string) *corev1.Pod {
		p, err := AttachPodFor(vmi, owner, &virtv1.Volume{Name: vol, VolumeSource: hotVolume(vol, vol+"-claim").VolumeSource}, false,
			PodOptions{LauncherImage: "x"})
		assert.NilError(t, err)
		p.Name = "hp-" + vol + "-" + string(owner.UID)
		return p
	}
	reported := func(names ...string) vmiOpt {
		return func(v *virtv1.VirtualMachineInstance) {
			for _, n := range names {
				v.Status.VolumeStatus = append(v.Status.VolumeStatus, virtv1.VolumeStatus{Name: n, HotplugVolume: &virtv1.HotplugVolumeStatus{}})
			}
		}
	}
	namedBy := func(vol, pod string) vmiOpt {
		return func(v *virtv1.VirtualMachineInstance) {
			v.Status.VolumeStatus = append(v.Status.VolumeStatus, virtv1.VolumeStatus{Name: vol, Target: "sda",
				HotplugVolume: &virtv1.HotplugVolumeStatus{AttachPodName: pod}})
		}
	}
	target := newPod(onNode("node-b"), func(p *corev1.Pod) { p.Name, p.UID = "target-pod", "target-uid" })
	migrating := func(completed, failed bool) vmiOpt {
		return func(v *virtv1.VirtualMachineInstance) {
			v.Status.MigrationState = &virtv1.VirtualMachineInstanceMigrationState{TargetPod: target.Name, Completed: completed, Failed: failed}
		}
	}
	names := func(ps []*corev1.Pod) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Name)
		}
		return out
	}
	for _, c := range []struct {
		name         string
		vmi          *virtv1.VirtualMachineInstance
		launcher     *corev1.Pod
		have         []*corev1.Pod
		create, gone []string
	}{
		{"none yet", vmi, launcher, nil, []string{"a", "b"}, nil},
		{"one there", vmi, launcher, []*corev1.Pod{pod(launcher, "a")}, []string{"b"}, nil},
		{"not running yet", newVMI(withHotplug("a"), phase(virtv1.Scheduled)), launcher, nil, nil, nil},
		{"a volume without a disk", newVMI(phase(virtv1.Running), func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Volumes = []virtv1.Volume{hotVolume("a", "a-claim")}
		}), launcher, nil, nil, nil},
		{"removed, still reported", newVMI(withHotplug("a"), phase(virtv1.Running), reported("b")), launcher,
			[]*corev1.Pod{pod(launcher, "a"), pod(launcher, "b")}, nil, nil},
		{"removed and let go", newVMI(withHotplug("a"), phase(virtv1.Running)), launcher,
			[]*corev1.Pod{pod(launcher, "a"), pod(launcher, "b")}, nil, []string{"hp-b-pod-uid"}},
		{"a former launcher's, let go", newVMI(withHotplug("a"), phase(virtv1.Running)), launcher,
			[]*corev1.Pod{pod(other, "a")}, []string{"a"}, []string{"hp-a-old-launcher"}},
		{"a former launcher's, still named", newVMI(withHotplug("a"), phase(virtv1.Running), namedBy("a", "hp-a-old-launcher")), launcher,
			[]*corev1.Pod{pod(other, "a")}, []string{"a"}, nil},
		{"a former launcher's, another named", newVMI(withHotplug("a"), phase(virtv1.Running), namedBy("a", "hp-a-pod-uid")), launcher,
			[]*corev1.Pod{pod(other, "a"), pod(launcher, "a")}, nil, []string{"hp-a-old-launcher"}},
		{"a running migration's target", newVMI(withHotplug("a"), phase(virtv1.Running), namedBy("a", "hp-a-pod-uid"), migrating(false, false)), launcher,
			[]*corev1.Pod{pod(launcher, "a"), pod(target, "a")}, nil, nil},
		{"a failed migration's target", newVMI(withHotplug("a"), phase(virtv1.Running), namedBy("a", "hp-a-pod-uid"), migrating(true, true)), launcher,
			[]*corev1.Pod{pod(launcher, "a"), pod(target, "a")}, nil, []string{"hp-a-target-uid"}},
		{"final", newVMI(withHotplug("a"), phase(virtv1.Succeeded), reported("a")), launcher,
			[]*corev1.Pod{pod(launcher, "a")}, nil, []string{"hp-a-pod-uid"}},
		{"being deleted, still reported", newVMI(withHotplug("a"), phase(virtv1.Running), vmiDeleting(), reported("a")), launcher,
			[]*corev1.Pod{pod(launcher, "a")}, nil, nil},
		{"the launcher pod is gone", newVMI(withHotplug("a"), phase(virtv1.Running), reported("a")), nil,
			[]*corev1.Pod{pod(launcher, "a")}, nil, []string{"hp-a-pod-uid"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := PlanAttachPods(c.vmi, c.launcher, c.have)
			if d := cmp.Diff(c.create, got.Create); d != "" {
				t.Errorf("create (-want +got):\n%s", d)
			}
			if d := cmp.Diff(c.gone, names(got.Delete)); d != "" {
				t.Errorf("delete (-want +got):\n%s", d)
			}
		})
	}
}

// HotplugDisks are the hotpluggable volumes with disks; AttachedHotplug
// those of them whose status names a target device.
func TestAttachedHotplug(t *testing.T) {
	v := newVMI(withHotplug("a", "b", "c"), func(v *virtv1.VirtualMachineInstance) {
		v.Spec.Volumes = append(v.Spec.Volumes, hotVolume("no-disk", "x"))
		v.Status.VolumeStatus = []virtv1.VolumeStatus{
			{Name: "a", Target: "sda", HotplugVolume: &virtv1.HotplugVolumeStatus{}},
			{Name: "b", Phase: virtv1.VolumePending, HotplugVolume: &virtv1.HotplugVolumeStatus{}},
			{Name: "c", Target: "sdb", Phase: virtv1.HotplugVolumeDetaching, HotplugVolume: &virtv1.HotplugVolumeStatus{}},
			{Name: "no-disk", Target: "sdc", HotplugVolume: &virtv1.HotplugVolumeStatus{}},
			{Name: "gone", Target: "sdd", HotplugVolume: &virtv1.HotplugVolumeStatus{}},
		}
	})
	if d := cmp.Diff([]string{"a", "b", "c"}, HotplugDisks(v)); d != "" {
		t.Errorf("HotplugDisks (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"a", "c"}, AttachedHotplug(v)); d != "" {
		t.Errorf("AttachedHotplug (-want +got):\n%s", d)
	}
}
