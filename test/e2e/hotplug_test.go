package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/controllers/conditions"
	"github.com/virtkit/virtkit/internal/linuxproc"
	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/virt/launcher/contract"
)

// Volume hotplug end to end: a claim added to a running VM with virtctl
// gets an attachment pod on the VMI's node, its image is bound into the
// launcher pod and attached on SCSI, and the guest sees the disk and
// writes to it; removed, the guest sees it go and the attachment pod and
// the bind go too. Declared in the VM's template instead, it reaches the
// running VMI, comes back with what the guest wrote after a restart, and
// goes when the template drops it; a template change that cannot be
// applied live says RestartRequired until the restart. A claim that does not exist and a name
// in use are refused, naming why, with nothing written; so is a hotplug
// into a VMI that does not run. Stopping the VM leaves no attachment pod
// and no bind.
func TestVolumeHotplug(t *testing.T) {
	w := up(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	ns := "default"

	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hotty-disk"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")}}}}
	must(t, w.c.Create(ctx, pvc))
	vm := w.readVM(t, "../../examples/manifests/vm-tiny.yaml")
	vm.Name = "hotty"
	must(t, w.c.Create(ctx, vm))
	first := w.waitRunning(ctx, t, vm)
	serial := w.serialLog(ctx, t, first)
	waitFile(ctx, t, serial, "VIRTKIT-READY")

	// Refused, with nothing written: a claim that is not there, a name in use.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"addvolume", vm.Name, "--volume-name=no-such-claim"}, "no-such-claim is not a DataVolume or PersistentVolumeClaim"},
		{[]string{"addvolume", vm.Name, "--volume-name=hotty-disk", "--disk-name=containerdisk"}, "already exists"},
	} {
		if out, err := w.virtctlFails(ctx, t, c.args...); !strings.Contains(out, c.want) {
			t.Errorf("virtctl %s: %v, %q; want it refused saying %q", strings.Join(c.args, " "), err, out, c.want)
		}
	}

	w.virtctl(ctx, t, "addvolume", vm.Name, "-n", ns, "--volume-name=hotty-disk")
	hot := w.waitVolume(ctx, t, first, "hotty-disk", virtv1.VolumeReady)
	if hot.Target != "sda" || hot.HotplugVolume == nil || hot.HotplugVolume.AttachPodName == "" {
		t.Errorf("volume status %+v: want target sda and the attachment pod named", hot)
	}
	hp := &corev1.Pod{}
	must(t, w.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: hot.HotplugVolume.AttachPodName}, hp))
	if hp.Spec.NodeName != first.Status.NodeName || hp.Status.Phase != corev1.PodRunning {
		t.Errorf("attachment pod %s on %q in phase %s; want Running on the VMI's node %s", hp.Name, hp.Spec.NodeName, hp.Status.Phase, first.Status.NodeName)
	}
	waitFile(ctx, t, serial, "VIRTKIT-DISK-ADDED sda")
	waitFile(ctx, t, serial, "VIRTKIT-DISK sda previous=none wrote=1 readback=ok")
	if n := hotplugBinds(t); n != 1 {
		t.Errorf("%d hotplug binds on the node, want 1", n)
	}

	w.virtctl(ctx, t, "removevolume", vm.Name, "-n", ns, "--volume-name=hotty-disk")
	waitFile(ctx, t, serial, "VIRTKIT-DISK-REMOVED sda")
	w.waitNoHotplug(ctx, t, first)

	// Declared: the claim added to the VM's template reaches the running
	// VMI (the VM controller carries it), and is back after a restart
	// with the guest's marker.
	must(t, w.c.Get(ctx, client.ObjectKeyFromObject(vm), vm))
	if hasVolume(vm.Spec.Template.Spec.Volumes, "hotty-disk") {
		t.Errorf("the VM's template still has hotty-disk after removevolume: %+v", vm.Spec.Template.Spec.Volumes)
	}
	vm.Spec.Template.Spec.Volumes = append(vm.Spec.Template.Spec.Volumes, virtv1.Volume{Name: "hotty-disk", VolumeSource: virtv1.VolumeSource{
		PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{Hotpluggable: true,
			PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: pvc.Name}}}})
	vm.Spec.Template.Spec.Domain.Devices.Disks = append(vm.Spec.Template.Spec.Domain.Devices.Disks, virtv1.Disk{Name: "hotty-disk",
		DiskDevice: virtv1.DiskDevice{Disk: &virtv1.DiskTarget{Bus: virtv1.DiskBusSCSI}}})
	must(t, w.c.Update(ctx, vm))
	w.waitVolume(ctx, t, first, "hotty-disk", virtv1.VolumeReady)
	waitFile(ctx, t, serial, "VIRTKIT-DISK sda previous=1 wrote=2 readback=ok")
	// That change was live: no restart is asked for. One that cannot be
	// applied live asks for one, until the restart.
	restartRequired := func() *virtv1.VirtualMachineCondition {
		must(t, w.c.Get(ctx, client.ObjectKeyFromObject(vm), vm))
		return conditions.VM().Find(vm.Status.Conditions, virtv1.VirtualMachineRestartRequired)
	}
	if c := restartRequired(); c != nil {
		t.Errorf("a declared hotplug asks for a restart: %+v", c)
	}
	vm.Spec.Template.Spec.TerminationGracePeriodSeconds = ptrTo(int64(20))
	must(t, w.c.Update(ctx, vm))
	eventually(ctx, t, "the VM saying RestartRequired", func() (bool, string) {
		c := restartRequired()
		return c != nil && c.Status == corev1.ConditionTrue && c.Message == "a non-live-updatable field was changed in the template spec", fmt.Sprintf("%+v", c)
	})
	w.virtctl(ctx, t, "restart", vm.Name, "-n", ns)
	var second *virtv1.VirtualMachineInstance
	eventually(ctx, t, "the VM restarted", func() (bool, string) {
		v := &virtv1.VirtualMachineInstance{}
		err := w.c.Get(ctx, client.ObjectKeyFromObject(vm), v)
		second = v
		return err == nil && v.UID != first.UID && v.Status.Phase == virtv1.Running, fmt.Sprint(err)
	})
	w.waitVolume(ctx, t, second, "hotty-disk", virtv1.VolumeReady)
	eventually(ctx, t, "RestartRequired gone after the restart", func() (bool, string) {
		c := restartRequired()
		return c == nil, fmt.Sprintf("%+v", c)
	})
	secondSerial := w.serialLog(ctx, t, second)
	waitFile(ctx, t, secondSerial, "VIRTKIT-DISK sda previous=2 wrote=3 readback=ok")

	// Dropped from the template: unplugged from the running VMI.
	must(t, w.c.Get(ctx, client.ObjectKeyFromObject(vm), vm))
	vm.Spec.Template.Spec.Volumes = vm.Spec.Template.Spec.Volumes[:len(vm.Spec.Template.Spec.Volumes)-1]
	vm.Spec.Template.Spec.Domain.Devices.Disks = vm.Spec.Template.Spec.Domain.Devices.Disks[:len(vm.Spec.Template.Spec.Domain.Devices.Disks)-1]
	must(t, w.c.Update(ctx, vm))
	waitFile(ctx, t, secondSerial, "VIRTKIT-DISK-REMOVED sda")
	w.waitNoHotplug(ctx, t, second)

	// Stopped: nothing is left on the node, and a hotplug is refused.
	w.virtctl(ctx, t, "stop", vm.Name, "-n", ns)
	w.waitNoVMI(ctx, t, vm)
	w.waitNoHotplug(ctx, t, nil)
	opts := virtv1.AddVolumeOptions{Name: "again", Disk: &virtv1.Disk{DiskDevice: virtv1.DiskDevice{Disk: &virtv1.DiskTarget{Bus: virtv1.DiskBusSCSI}}},
		VolumeSource: &virtv1.HotplugVolumeSource{PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: pvc.Name}}}}
	if err := w.sub.AddVMIVolume(ctx, ns, vm.Name, opts); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("a hotplug into the VMI of the stopped VM: %v, want it refused as there is none", err)
	}

	must(t, w.c.Delete(ctx, vm))
	must(t, w.c.Delete(ctx, pvc))
	w.waitStorageEmpty(ctx, t)
}

// A hotplugged disk goes with its guest on a live migration: the migration
// brings it to the target pod with an attachment pod of its own before the
// guest comes, the guest reads on the other node what it wrote before and
// writes again, and the source's attachment pod and bind go. Unplugged
// there, it leaves nothing behind.
func TestHotplugMigration(t *testing.T) {
	a, b := nodeName("a"), nodeName("b")
	w := up(t, a, b)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "shared-disk"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")}}}}
	must(t, w.c.Create(ctx, pvc))
	vm, src, srcLog := w.tinyReady(ctx, t)
	w.virtctl(ctx, t, "addvolume", vm.Name, "-n", vm.Namespace, "--volume-name="+pvc.Name)
	hot := w.waitVolume(ctx, t, src, pvc.Name, virtv1.VolumeReady)
	waitFile(ctx, t, srcLog, "VIRTKIT-DISK sda previous=none wrote=1 readback=ok")
	w.waitVMI(ctx, t, vm, "live-migratable with the shared disk hotplugged", func(v *virtv1.VirtualMachineInstance) bool {
		c := conditions.VMI().Find(v.Status.Conditions, virtv1.VirtualMachineInstanceIsMigratable)
		return c != nil && c.Status == corev1.ConditionTrue
	})

	w.virtctl(ctx, t, "migrate", vm.Name, "-n", vm.Namespace)
	mig := w.waitMigration(ctx, t, vm, virtv1.MigrationSucceeded)
	// Its interface reported from the target too: the volume's status may
	// come a write before the new pod's address.
	dst := w.waitVMI(ctx, t, vm, "on the other node, its disk held there and its address the target pod's", func(v *virtv1.VirtualMachineInstance) bool {
		if len(v.Status.Interfaces) == 0 || len(src.Status.Interfaces) == 0 || v.Status.Interfaces[0].IP == src.Status.Interfaces[0].IP {
			return false
		}
		for _, s := range v.Status.VolumeStatus {
			if s.Name == pvc.Name {
				return v.Status.NodeName != src.Status.NodeName && s.Phase == virtv1.VolumeReady && s.Target == "sda" &&
					s.HotplugVolume != nil && s.HotplugVolume.AttachPodName != hot.HotplugVolume.AttachPodName
			}
		}
		return false
	})
	var held corev1.Pod
	must(t, w.c.Get(ctx, client.ObjectKey{Namespace: vm.Namespace, Name: volumeOf(dst, pvc.Name).HotplugVolume.AttachPodName}, &held))
	if ref := metav1.GetControllerOf(&held); held.Spec.NodeName != dst.Status.NodeName || ref == nil || ref.Name != mig.Status.MigrationState.TargetPod {
		t.Errorf("the attachment pod %s on %q controlled by %+v; want on %s by the target pod %s", held.Name, held.Spec.NodeName, ref,
			dst.Status.NodeName, mig.Status.MigrationState.TargetPod)
	}
	eventually(ctx, t, "the source's attachment pod gone and one bind left", func() (bool, string) {
		err := w.c.Get(ctx, client.ObjectKey{Namespace: vm.Namespace, Name: hot.HotplugVolume.AttachPodName}, &corev1.Pod{})
		n := hotplugBinds(t)
		return apierrors.IsNotFound(err) && n == 1, fmt.Sprintf("source's pod: %v; %d binds", err, n)
	})
	// The guest, on the target, reads what it wrote at the source and writes again.
	httpAnswers(ctx, t, "http://"+dst.Status.Interfaces[0].IP+"/cgi-bin/disk?sda", "VIRTKIT-DISK sda previous=1 wrote=2 readback=ok")

	// Unplugged on the target.
	dstLog := filepath.Join(w.launcherFolder(ctx, t, src, mig.UID), contract.SerialLog)
	w.virtctl(ctx, t, "removevolume", vm.Name, "-n", vm.Namespace, "--volume-name="+pvc.Name)
	waitFile(ctx, t, dstLog, "VIRTKIT-DISK-REMOVED sda")
	w.waitNoHotplug(ctx, t, dst)
	w.deleteVM(ctx, t, vm)
	must(t, w.c.Delete(ctx, pvc))
	w.waitStorageEmpty(ctx, t)
}

// volumeOf is v's status of volume name; the caller knows it is there.
func volumeOf(v *virtv1.VirtualMachineInstance, name string) virtv1.VolumeStatus {
	for _, s := range v.Status.VolumeStatus {
		if s.Name == name {
			return s
		}
	}
	return virtv1.VolumeStatus{}
}

// virtctlFails runs virtctl expecting it to fail; it returns the output.
func (w *world) virtctlFails(ctx context.Context, t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(ctx, testenv.Output(t, "bin", "virtctl"), append(args, "--kubeconfig", w.kubeconfig)...)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Errorf("virtctl %s succeeded: %s", strings.Join(args, " "), out)
	}
	return string(out), err
}

// waitVolume waits until v's volume name has phase and returns its status.
func (w *world) waitVolume(ctx context.Context, t *testing.T, v *virtv1.VirtualMachineInstance, name string, phase virtv1.VolumePhase) virtv1.VolumeStatus {
	t.Helper()
	var got virtv1.VolumeStatus
	eventually(ctx, t, "volume "+name+" "+string(phase), func() (bool, string) {
		cur := &virtv1.VirtualMachineInstance{}
		if err := w.c.Get(ctx, client.ObjectKeyFromObject(v), cur); err != nil {
			return false, err.Error()
		}
		for _, s := range cur.Status.VolumeStatus {
			if s.Name == name {
				got = s
				return s.Phase == phase, fmt.Sprintf("%+v", s)
			}
		}
		return false, fmt.Sprintf("not in %+v", cur.Status.VolumeStatus)
	})
	return got
}

// waitNoHotplug waits until no attachment pod exists, no hotplug bind is
// on the node and (with v) v reports no hotplugged volume.
func (w *world) waitNoHotplug(ctx context.Context, t *testing.T, v *virtv1.VirtualMachineInstance) {
	t.Helper()
	eventually(ctx, t, "no attachment pod, hotplug bind or hotplug volume status", func() (bool, string) {
		var pods corev1.PodList
		if err := w.c.List(ctx, &pods, client.MatchingLabels{virtv1.AppLabel: contract.HotplugLabelValue}); err != nil {
			return false, err.Error()
		}
		if len(pods.Items) > 0 {
			return false, fmt.Sprintf("%d attachment pods", len(pods.Items))
		}
		if n := hotplugBinds(t); n > 0 {
			return false, fmt.Sprintf("%d binds", n)
		}
		if v == nil {
			return true, ""
		}
		cur := &virtv1.VirtualMachineInstance{}
		if err := w.c.Get(ctx, client.ObjectKeyFromObject(v), cur); err != nil {
			return false, err.Error()
		}
		for _, s := range cur.Status.VolumeStatus {
			if s.HotplugVolume != nil {
				return false, fmt.Sprintf("%+v", s)
			}
		}
		return true, ""
	})
}

// hotplugBinds counts the images bound into launcher pods' hotplug folders
// on this machine's nodes.
func hotplugBinds(t *testing.T) int {
	t.Helper()
	mounts, err := linuxproc.ReadMounts("/proc/self/mountinfo")
	must(t, err)
	n := 0
	for _, m := range mounts {
		if strings.Contains(m.MountPoint, "/kubernetes.io~empty-dir/"+contract.HotplugVolume+"/") {
			n++
		}
	}
	return n
}

func hasVolume(vols []virtv1.Volume, name string) bool {
	for _, v := range vols {
		if v.Name == name {
			return true
		}
	}
	return false
}
