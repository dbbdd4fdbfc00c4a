package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	virtv1 "kubevirt.io/api/core/v1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/virt/launcher/contract"
)

// TestBlockVolumes: claims in Block mode on virt-local's process nodes,
// as a KubeVirt user has them on any CSI storage. Two DataVolumes import
// into Block claims (a qcow2 root converted through a scratch claim, and
// a raw data disk): the importer pod gets each claim as a device. The VM
// boots from the first and its guest finds the data disk's marker: the
// launcher pod has both as devices at /dev/<volume> (node of the pod's
// own, the host's /dev untouched) and libvirt as block disks. The claims
// are ReadWriteMany, so the VM live-migrates to the other node, whose
// target pod has them as devices too. A third Block claim is hotplugged
// there and removed. What the guest wrote is there after stop and start,
// and in the data claim's export (`virtctl vmexport download
// --port-forward`, through the local node's kubelet API); a launcher
// pod's log reads the same through the apiserver. Deleting everything
// detaches every loop device of the claims and leaves nothing.
func TestBlockVolumes(t *testing.T) {
	w := up(t, nodeName("a"), nodeName("b"))
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	s := guestImageServer(t)
	s.put("seven.raw.gz", gzipOf(t, markedDisk(7, 8<<20)))
	const ns = "default"
	w.importSecrets(ctx, t, ns, s)
	block := corev1.PersistentVolumeBlock
	for name, spec := range map[string]cdiv1.DataVolumeSpec{
		"block-root": httpSpec(s, "guest.qcow2", "64Mi"),
		"block-data": httpSpec(s, "seven.raw.gz", "16Mi"),
	} {
		spec.Storage.VolumeMode = &block
		spec.Storage.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
		must(t, w.c.Create(ctx, &cdiv1.DataVolume{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}))
	}
	vm := w.vmWithDisks(t, "blocky", "block-root", "block-data")
	must(t, w.c.Create(ctx, vm))

	first := w.waitRunning(ctx, t, vm)
	firstLog := w.serialLog(ctx, t, first)
	waitFile(ctx, t, firstLog, "hello from blocky")
	// vda is the root, vdb cloud-init's, vdc the data claim's.
	waitFile(ctx, t, firstLog, "VIRTKIT-DISK vdc previous=7 wrote=8 readback=ok")
	for _, name := range []string{"block-root", "block-data"} {
		pvc := &corev1.PersistentVolumeClaim{}
		must(t, w.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pvc))
		if pvc.Spec.VolumeMode == nil || *pvc.Spec.VolumeMode != block {
			t.Errorf("claim %s: volume mode %v, want Block", name, pvc.Spec.VolumeMode)
		}
	}

	// The launcher pod has the claims as devices, and the VMI says Block.
	w.checkBlockDevices(ctx, t, first)
	must(t, w.c.Get(ctx, client.ObjectKeyFromObject(first), first))
	seen := 0
	for _, st := range first.Status.VolumeStatus {
		if st.Name != "containerdisk" && st.Name != "data" {
			continue
		}
		seen++
		if info := st.PersistentVolumeClaimInfo; info == nil || info.VolumeMode == nil || *info.VolumeMode != block {
			t.Errorf("VMI volume status %s: claim info %+v, want volume mode Block", st.Name, info)
		}
	}
	if seen != 2 {
		t.Errorf("VMI volume statuses %+v: want the two claims'", first.Status.VolumeStatus)
	}
	for _, host := range []string{"/dev/containerdisk", "/dev/data"} {
		if _, err := os.Lstat(host); err == nil {
			t.Errorf("the node's /dev got %s", host)
		}
	}
	if loops := w.claimLoops(t); len(loops) != 2 {
		t.Errorf("loop devices of the claims while the VM runs: %v, want the two claims'", loops)
	}

	// The claims are ReadWriteMany: the VM migrates,
	// its target pod having them as devices too.
	w.virtctl(ctx, t, "migrate", vm.Name, "-n", vm.Namespace)
	mig := w.waitMigration(ctx, t, vm, virtv1.MigrationSucceeded)
	moved := w.waitVMI(ctx, t, vm, "on the other node", func(v *virtv1.VirtualMachineInstance) bool {
		return v.Status.NodeName != first.Status.NodeName
	})
	w.checkBlockDevices(ctx, t, moved)
	w.checkPodLogs(ctx, t, moved, mig.UID)

	// A Block claim hotplugged into the running VM: the attachment pod
	// gets it as a device, the handler makes the device's node in the
	// launcher pod's hotplug folder, and the guest writes to the disk;
	// removed, the node goes with the attachment pod.
	movedFolder := w.launcherFolder(ctx, t, moved, mig.UID)
	movedLog := filepath.Join(movedFolder, contract.SerialLog)
	hotClaim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "block-hot"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, VolumeMode: &block,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("16Mi")}}}}
	must(t, w.c.Create(ctx, hotClaim))
	w.virtctl(ctx, t, "addvolume", vm.Name, "-n", ns, "--volume-name=block-hot")
	hot := w.waitVolume(ctx, t, moved, "block-hot", virtv1.VolumeReady)
	if info := hot.PersistentVolumeClaimInfo; hot.Target != "sda" || info == nil || info.VolumeMode == nil || *info.VolumeMode != block {
		t.Errorf("hotplugged volume status %+v: want target sda, volume mode Block", hot)
	}
	waitFile(ctx, t, movedLog, "VIRTKIT-DISK-ADDED sda")
	waitFile(ctx, t, movedLog, "VIRTKIT-DISK sda previous=none wrote=1 readback=ok")
	hotFolder := filepath.Join(filepath.Dir(movedFolder), contract.HotplugVolume)
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(hotFolder, "block-hot"), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFBLK || st.Uid != contract.QEMUUser {
		t.Errorf("the device node in the launcher pod's hotplug folder: %+v, %v; want a block device of the QEMU user", st, err)
	}
	w.virtctl(ctx, t, "removevolume", vm.Name, "-n", ns, "--volume-name=block-hot")
	waitFile(ctx, t, movedLog, "VIRTKIT-DISK-REMOVED sda")
	w.waitNoHotplug(ctx, t, moved)
	if _, err := os.Lstat(filepath.Join(hotFolder, "block-hot")); !os.IsNotExist(err) {
		t.Errorf("the device node after the unplug: %v, want it gone", err)
	}
	must(t, w.c.Delete(ctx, hotClaim))

	// The guest powers off from the target, and writes no more.
	w.virtctl(ctx, t, "stop", vm.Name, "-n", vm.Namespace)
	waitFile(ctx, t, movedLog, "VIRTKIT-POWEROFF")
	w.waitNoVMI(ctx, t, vm)
	w.virtctl(ctx, t, "start", vm.Name, "-n", vm.Namespace)
	second := w.waitRunning(ctx, t, vm)
	waitFile(ctx, t, w.serialLog(ctx, t, second), "VIRTKIT-DISK vdc previous=8 wrote=9 readback=ok")

	must(t, w.c.Delete(ctx, vm))
	w.waitNoVMI(ctx, t, vm)

	// Exported, the Block claim is served from its device: KubeVirt's
	// virtctl flow downloads what the guest wrote last, through a port
	// forwarded to the server pod (the apiserver to the local node's
	// kubelet API, the node into the pod's network namespace).
	out := filepath.Join(t.TempDir(), "block-data.img")
	args := []string{"vmexport", "download", "block-export", "--pvc=block-data", "--output=" + out, "--format=raw", "--port-forward", "-n", ns, "--kubeconfig", w.kubeconfig}
	cmdOut, err := exec.CommandContext(ctx, testenv.Output(t, "bin", "virtctl"), args...).CombinedOutput()
	t.Logf("virtctl %s:\n%s", strings.Join(args, " "), cmdOut)
	must(t, err)
	got, err := os.ReadFile(out)
	must(t, err)
	if want := "VIRTKIT-DATA n=9\n"; len(got) < 16<<20 || !strings.HasPrefix(string(got), want) {
		t.Errorf("the exported Block claim: %d bytes starting %.20q, want 16 MiB starting %q", len(got), got, want)
	}
	if !strings.Contains(string(cmdOut), "forwarding 127.0.0.1:") {
		t.Errorf("virtctl did not say it forwarded a port: %s", cmdOut)
	}

	for _, n := range []string{"block-root", "block-data"} {
		must(t, w.c.Delete(ctx, &cdiv1.DataVolume{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: n}}))
	}
	w.waitNothingLeft(ctx, t, ns)
	if loops := w.claimLoops(t); len(loops) != 0 {
		t.Errorf("loop devices left on the claims' files: %v", loops)
	}
}

// checkBlockDevices checks that v's running launcher pod has the VM's two
// claims as devices at /dev/<volume>.
func (w *world) checkBlockDevices(ctx context.Context, t *testing.T, v *virtv1.VirtualMachineInstance) {
	t.Helper()
	var pods corev1.PodList
	must(t, w.c.List(ctx, &pods, client.InNamespace(v.Namespace), client.MatchingLabels{virtv1.CreatedByLabel: string(v.UID)}))
	running := 0
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning || p.Spec.NodeName != v.Status.NodeName {
			continue
		}
		running++
		devices := map[string]string{}
		for _, d := range p.Spec.Containers[0].VolumeDevices {
			devices[d.Name] = d.DevicePath
		}
		if want := map[string]string{"containerdisk": "/dev/containerdisk", "data": "/dev/data"}; fmt.Sprint(devices) != fmt.Sprint(want) {
			t.Errorf("pod %s: volumeDevices %v, want %v", p.Name, devices, want)
		}
	}
	if running != 1 {
		t.Errorf("%d running launcher pods of %s on %s, want 1", running, v.Name, v.Status.NodeName)
	}
}

// checkPodLogs reads the compute container's log of v's launcher pod
// (migration's target pod) through the apiserver, which gets it from the
// local node's kubelet API: what the node's log file held then.
func (w *world) checkPodLogs(ctx context.Context, t *testing.T, v *virtv1.VirtualMachineInstance, migration types.UID) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(w.rest)
	must(t, err)
	var pods corev1.PodList
	must(t, w.c.List(ctx, &pods, client.InNamespace(v.Namespace), client.MatchingLabels{virtv1.CreatedByLabel: string(v.UID)}))
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning || p.Spec.NodeName != v.Status.NodeName {
			continue
		}
		logs, err := cs.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: "compute"}).DoRaw(ctx)
		must(t, err)
		file, err := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(w.launcherFolder(ctx, t, v, migration)))), "logs", "compute.log"))
		must(t, err)
		if len(logs) == 0 || !strings.HasPrefix(string(file), string(logs)) {
			t.Errorf("pod %s's log through the API (%d bytes) is not the node's log file (%d bytes)", p.Name, len(logs), len(file))
		}
	}
}

// claimLoops lists the loop devices whose backing file is in virt-local's
// CSI folder.
func (w *world) claimLoops(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("/sys/block/loop*/loop/backing_file")
	must(t, err)
	var loops []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // detached meanwhile
		}
		if strings.HasPrefix(strings.TrimSpace(string(b)), filepath.Join(w.data, "csi")+"/") {
			loops = append(loops, strings.Split(f, "/")[3]+": "+strings.TrimSpace(string(b)))
		}
	}
	return loops
}
