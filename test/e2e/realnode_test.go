package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/deploy"
	"github.com/virtkit/virtkit/internal/linuxproc"
	"github.com/virtkit/virtkit/internal/localcluster"
	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/local/cluster"
	"github.com/virtkit/virtkit/local/csidriver"
	"github.com/virtkit/virtkit/virt/devices"
	"github.com/virtkit/virtkit/virt/launcher/contract"
	"github.com/virtkit/virtkit/virt/storage/backendstorage"
)

// virt-local with a real node beside its local one: virt-handler runs on
// the real node as a DaemonSet pod from its image and serves the kubelet's
// device plugins, virt-api and virt-controller as Deployment pods from
// theirs; the example VM, placed on that node, runs in a launcher
// container from the launcher image, with a containerDisk mounted by the
// kubelet as an image volume; its console reaches virt-api's pod through
// the handler's node API over TLS, its web server answers through the node's
// pod network, a claim hotplugged with virtctl reaches the guest and goes
// again, its persistent vTPM (backend storage, the claim's folders
// mounted by the kubelet, swtpm in the launcher image) keeps its
// endorsement key across `virtctl stop` and `start`, deleting it leaves
// nothing, and Down leaves the host as it was.
func TestRealNode(t *testing.T) {
	testenv.Integration(t)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	local, real := nodeName("local"), nodeName("kubelet")
	repo, err := testenv.RepoRoot()
	assert.NilError(t, err)
	c, err := localcluster.Start(ctx, localcluster.Options{Repo: repo, Nodes: []string{local}, KubeletNode: real, DataPrefix: "vkr-",
		Logger: testr.NewWithOptions(t, testr.Options{Verbosity: 0})})
	assert.NilError(t, err)
	stopped := false
	defer func() {
		if !stopped {
			assert.NilError(t, c.Stop(context.Background()))
		}
	}()
	w := worldOf(t, c)

	// The real node is Ready and, once its handler beats, schedulable for
	// launchers, with the devices of the handler's plugins.
	vhostWant := int64(0) // the plugin reports a missing device unhealthy
	if _, err := os.Stat("/dev/vhost-net"); err == nil {
		vhostWant = devices.DefaultCount
	}
	var node corev1.Node
	testenv.Eventually(ctx, t, "the real node Ready, schedulable, with tun and vhost-net", func() (bool, string) {
		if err := c.Client.Get(ctx, client.ObjectKey{Name: real}, &node); err != nil {
			return false, err.Error()
		}
		ready := false
		for _, cond := range node.Status.Conditions {
			ready = ready || (cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue)
		}
		tun, vhost := node.Status.Allocatable[devices.Tun], node.Status.Allocatable[devices.VhostNet]
		_, kvm := node.Status.Allocatable[devices.KVM]
		return ready && node.Labels[virtv1.NodeSchedulable] == "true" && tun.Value() == devices.DefaultCount && vhost.Value() == vhostWant && !kvm,
			fmt.Sprintf("ready %v, labels %v, allocatable %v", ready, node.Labels, node.Status.Allocatable)
	})

	// The handler labelled its node with the CPU models and features a
	// guest can have there (under emulation: QEMU's), as KubeVirt's node
	// labeller does, from the launcher image's probe.
	models, hostModel := 0, false
	for k := range node.Labels {
		models += boolInt(strings.HasPrefix(k, virtv1.CPUModelLabel))
		hostModel = hostModel || strings.HasPrefix(k, virtv1.HostModelCPULabel)
	}
	assert.Assert(t, models > 0 && hostModel, "CPU labels of the real node: %v", node.Labels)

	// The daemons are containers of the real node, from the pushed images:
	// the handler privileged in the host's PID namespace, virt-api and
	// virt-controller as non-root users. Everything below goes through them.
	for _, name := range []string{deploy.HandlerName, deploy.APIName, deploy.ControllerName} {
		var pods corev1.PodList
		assert.NilError(t, c.Client.List(ctx, &pods, client.InNamespace(cluster.Namespace), client.MatchingLabels{virtv1.AppLabel: name}))
		assert.Equal(t, len(pods.Items), 1, "%s pods: %+v", name, pods.Items)
		p := pods.Items[0]
		assert.Equal(t, p.Spec.NodeName, real)
		assert.Equal(t, p.Spec.Containers[0].Image, c.Registry()+"/virtkit/"+name+":"+cluster.ImageTag)
		assert.Assert(t, containerOf(p), "%s pod %s: %+v", name, p.Name, p.Status.ContainerStatuses)
		if name == deploy.HandlerName {
			assert.Assert(t, p.Spec.HostPID, "the handler shares the host's PID namespace")
			continue
		}
		nonRoot := p.Spec.SecurityContext != nil && p.Spec.SecurityContext.RunAsNonRoot != nil && *p.Spec.SecurityContext.RunAsNonRoot
		assert.Assert(t, nonRoot, "%s runs as a non-root user: %+v", name, p.Spec.SecurityContext)
	}

	// KVM is off on this node (its handler emulates whatever the KubeVirt CR
	// says). With the CR's useEmulation turned off, virt-controller (which
	// reads the CR for each launcher pod) gives a new VMI a launcher that
	// asks for devices.kubevirt.io/kvm; the VMI stays unscheduled with the
	// scheduler's reason in its conditions. Then emulation is turned back on.
	vm := w.readVM(t, "../../examples/manifests/vm-tiny.yaml")
	setUseEmulation(ctx, t, w, false)
	needsKVM := &virtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "needs-kvm", Namespace: vm.Namespace},
		Spec: *vm.Spec.Template.Spec.DeepCopy()}
	needsKVM.Spec.NodeSelector = map[string]string{corev1.LabelHostname: real}
	must(t, w.c.Create(ctx, needsKVM))
	testenv.Eventually(ctx, t, "the VMI that needs KVM unschedulable for want of devices.kubevirt.io/kvm", func() (bool, string) {
		if err := w.c.Get(ctx, client.ObjectKeyFromObject(needsKVM), needsKVM); err != nil {
			return false, err.Error()
		}
		for _, cond := range needsKVM.Status.Conditions {
			if cond.Type == virtv1.VirtualMachineInstanceConditionType(corev1.PodScheduled) && cond.Status == corev1.ConditionFalse &&
				cond.Reason == corev1.PodReasonUnschedulable && strings.Contains(cond.Message, "Insufficient "+devices.KVM) {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%s %+v", needsKVM.Status.Phase, needsKVM.Status.Conditions)
	})
	assert.Assert(t, needsKVM.Status.Phase == virtv1.Pending || needsKVM.Status.Phase == virtv1.Scheduling,
		"the VMI that needs KVM is %s", needsKVM.Status.Phase)
	must(t, w.c.Delete(ctx, needsKVM))
	w.waitNoVMI(ctx, t, needsKVM)
	setUseEmulation(ctx, t, w, true)

	// The example VM, on the real node, with a data disk on a claim of
	// virt-local's CSI driver, which registered with the real node's
	// kubelet: the kubelet publishes the volume into the launcher pod.
	testenv.Eventually(ctx, t, "the CSI driver registered with the real node's kubelet", func() (bool, string) {
		var csiNode storagev1.CSINode
		if err := c.Client.Get(ctx, client.ObjectKey{Name: real}, &csiNode); err != nil {
			return false, err.Error()
		}
		for _, d := range csiNode.Spec.Drivers {
			if d.Name == csidriver.Name {
				return true, ""
			}
		}
		return false, fmt.Sprintf("drivers %+v", csiNode.Spec.Drivers)
	})
	data := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: vm.Namespace, Name: "real-data"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")}}}}
	must(t, w.c.Create(ctx, data))
	vm.Spec.Template.Spec.Domain.Devices.Disks = append(vm.Spec.Template.Spec.Domain.Devices.Disks,
		virtv1.Disk{Name: "data", DiskDevice: virtv1.DiskDevice{Disk: &virtv1.DiskTarget{Bus: virtv1.DiskBusVirtio}}})
	vm.Spec.Template.Spec.Volumes = append(vm.Spec.Template.Spec.Volumes, virtv1.Volume{Name: "data", VolumeSource: virtv1.VolumeSource{
		PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: data.Name}}}})
	vm.Spec.Template.Spec.NodeSelector = map[string]string{corev1.LabelHostname: real}
	// A persistent vTPM: its backend-storage claim's folders are mounted
	// by the real kubelet (subPaths), swtpm runs in the launcher image.
	vm.Spec.Template.Spec.Domain.Devices.TPM = &virtv1.TPMDevice{Persistent: ptr.To(true)}
	for i := range vm.Spec.Template.Spec.Volumes {
		if ci := vm.Spec.Template.Spec.Volumes[i].CloudInitNoCloud; ci != nil {
			ci.UserData = readEK
		}
	}
	must(t, w.c.Create(ctx, vm))
	vmi := w.waitRunning(ctx, t, vm)
	assert.Equal(t, vmi.Status.NodeName, real)
	// The guest prints its TPM's endorsement key at boot. It is read
	// before any console client connects: with one connected and slow,
	// QEMU's console log can repeat a byte (it logs a write the socket
	// refused with EAGAIN, then the retry).
	ek := w.guestEK(ctx, t, vmi)
	must(t, w.c.Get(ctx, client.ObjectKeyFromObject(data), data))
	if st, err := os.Stat(w.claimDisk(ctx, t, data)); err != nil || st.Size() == 0 {
		t.Fatalf("the data disk in the claim's volume: %v, %v; want the disk.img virt-handler made through the kubelet's publication", st, err)
	}
	var pods corev1.PodList
	must(t, w.c.List(ctx, &pods, client.InNamespace(vm.Namespace), client.MatchingLabels{virtv1.CreatedByLabel: string(vmi.UID)}))
	assert.Equal(t, len(pods.Items), 1, "launcher pods: %+v", pods.Items)
	launcher := pods.Items[0]
	assert.Equal(t, launcher.Spec.Containers[0].Image, c.Registry()+"/virtkit/virt-launcher:"+cluster.ImageTag)
	assert.Assert(t, containerOf(launcher), "launcher pod %s: %+v", launcher.Name, launcher.Status.ContainerStatuses)
	one := resource.MustParse("1")
	assert.Assert(t, launcher.Spec.Containers[0].Resources.Limits[devices.Tun].Equal(one), "the launcher asks for /dev/net/tun: %+v", launcher.Spec.Containers[0].Resources)

	if len(vmi.Status.Interfaces) == 0 || vmi.Status.Interfaces[0].IP == "" {
		t.Fatalf("VMI interfaces = %+v, want the pod IP", vmi.Status.Interfaces)
	}
	assert.Equal(t, vmi.Status.Interfaces[0].IP, launcher.Status.PodIP)
	w.consoleShows(ctx, t, vmi, "VIRTKIT-HEARTBEAT")
	launcherConfined(t, launcher)
	httpAnswers(ctx, t, "http://"+vmi.Status.Interfaces[0].IP+"/", "tiny")

	// A claim hotplugged into the running VM: the kubelet mounts it for
	// the attachment pod, the handler's pod binds its image into the
	// launcher container through the kubelet's pods folder (Bidirectional
	// there, HostToContainer in the launcher), and the guest writes to it.
	hot := data.DeepCopy()
	hot.ObjectMeta = metav1.ObjectMeta{Namespace: vm.Namespace, Name: "real-hot"}
	hot.Spec.VolumeName, hot.Status = "", corev1.PersistentVolumeClaimStatus{}
	must(t, w.c.Create(ctx, hot))
	w.virtctl(ctx, t, "addvolume", vm.Name, "-n", vm.Namespace, "--volume-name="+hot.Name)
	hotStatus := w.waitVolume(ctx, t, vmi, hot.Name, virtv1.VolumeReady)
	assert.Equal(t, hotStatus.Target, "sda")
	waitFile(ctx, t, w.serialLog(ctx, t, vmi), "VIRTKIT-DISK sda previous=none wrote=1 readback=ok")
	w.virtctl(ctx, t, "removevolume", vm.Name, "-n", vm.Namespace, "--volume-name="+hot.Name)
	w.waitNoHotplug(ctx, t, vmi)
	must(t, w.c.Delete(ctx, hot))

	// The TPM's state is in the VM's backend-storage claim (deleted with
	// the VM: no volume is left at the end): after a restart on the real
	// node the guest reads the same endorsement key (read, again, before
	// a console client connects).
	w.waitVMI(ctx, t, vm, "its volume status naming its backend-storage claim", func(v *virtv1.VirtualMachineInstance) bool {
		return backendstorage.ClaimName(&v.Status) != ""
	})
	w.virtctl(ctx, t, "stop", vm.Name, "-n", vm.Namespace)
	w.waitNoVMI(ctx, t, vm)
	w.virtctl(ctx, t, "start", vm.Name, "-n", vm.Namespace)
	again := w.waitRunning(ctx, t, vm)
	assert.Equal(t, again.Status.NodeName, real)
	if got := w.guestEK(ctx, t, again); got != ek {
		t.Errorf("the endorsement key after a restart on the real node:\n%s\nwant the first boot's:\n%s", got, ek)
	}

	w.stopStartDelete(ctx, t, vm, again)
	must(t, w.c.Delete(ctx, data))
	testenv.Eventually(ctx, t, "the claim's volume gone", func() (bool, string) {
		var pvs corev1.PersistentVolumeList
		must(t, w.c.List(ctx, &pvs))
		return len(pvs.Items) == 0, fmt.Sprintf("%d volumes", len(pvs.Items))
	})

	// Down fails unless the real node found the host as it recorded it
	// before starting.
	assert.NilError(t, c.Stop(ctx))
	stopped = true
}

// launcherConfined checks, in the kernel's own records, that the runtime
// enforces the launcher's security context on every process of its
// compute container, libvirtd and QEMU included: the qemu user, no
// capability, none in the bounding set beyond those the container adds,
// no_new_privs and a seccomp filter.
func launcherConfined(t *testing.T, pod corev1.Pod) {
	t.Helper()
	c := pod.Spec.Containers[0]
	assert.Assert(t, c.SecurityContext != nil && c.SecurityContext.Capabilities != nil, "launcher security context: %+v", c.SecurityContext)
	var allowed uint64
	for _, name := range c.SecurityContext.Capabilities.Add {
		bit, ok := linuxproc.CapabilityBit(string(name))
		assert.Assert(t, ok, "capability %q", name)
		allowed |= 1 << bit
	}
	id := ""
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name == c.Name {
			id = strings.TrimPrefix(s.ContainerID, "containerd://")
		}
	}
	assert.Assert(t, id != "", "container %s of pod %s: %+v", c.Name, pod.Name, pod.Status.ContainerStatuses)
	procs, err := linuxproc.List(linuxproc.InCgroupNamed(id))
	must(t, err)
	qemu, libvirtd := 0, 0
	for _, p := range procs {
		if strings.HasPrefix(p.Comm, "runc:[") {
			// runc's own init stage of a process being started in the
			// container (an exec probe): it applies the container's
			// seccomp filter and capabilities itself, just before it
			// executes the command, which is then checked as any other.
			continue
		}
		sec, err := linuxproc.SecurityOf(p.PID)
		if linuxproc.IsNotExist(err) {
			continue
		}
		must(t, err)
		if !sec.NoNewPrivs || sec.Seccomp != 2 || sec.Bounding&^allowed != 0 {
			t.Errorf("%s: no_new_privs %t, seccomp mode %d, capabilities %v beyond %v",
				p, sec.NoNewPrivs, sec.Seccomp, linuxproc.CapabilityNames(sec.Bounding&^allowed), c.SecurityContext.Capabilities.Add)
		}
		if sec.UID != contract.QEMUUser || sec.Effective != 0 {
			t.Errorf("%s: uid %d, effective capabilities %v; want uid %d and none", p, sec.UID, linuxproc.CapabilityNames(sec.Effective), contract.QEMUUser)
		}
		switch {
		case p.Comm == "libvirtd":
			libvirtd++
		// The guest's QEMU, not a capability probe of libvirt's (-machine none).
		case strings.HasPrefix(p.Comm, "qemu-system") && strings.Contains(p.Cmdline, "-name guest="):
			qemu++
		}
	}
	assert.Assert(t, qemu == 1 && libvirtd == 1, "one libvirtd and one QEMU among the processes of container %s: %v", id, procs)
}

// containerOf reports whether pod runs, and every container of it runs as
// a containerd container.
func containerOf(pod corev1.Pod) bool {
	if pod.Status.Phase != corev1.PodRunning || len(pod.Status.ContainerStatuses) == 0 {
		return false
	}
	for _, s := range pod.Status.ContainerStatuses {
		if s.State.Running == nil || !strings.HasPrefix(s.ContainerID, "containerd://") {
			return false
		}
	}
	return true
}

// setUseEmulation sets the KubeVirt CR's
// developerConfiguration.useEmulation.
func setUseEmulation(ctx context.Context, t *testing.T, w *world, on bool) {
	t.Helper()
	var kv virtv1.KubeVirt
	must(t, w.c.Get(ctx, client.ObjectKey{Namespace: cluster.Namespace, Name: "kubevirt"}, &kv))
	if kv.Spec.Configuration.DeveloperConfiguration == nil {
		kv.Spec.Configuration.DeveloperConfiguration = &virtv1.DeveloperConfiguration{}
	}
	kv.Spec.Configuration.DeveloperConfiguration.UseEmulation = on
	must(t, w.c.Update(ctx, &kv))
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
