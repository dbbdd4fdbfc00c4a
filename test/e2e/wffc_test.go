package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	virtv1 "kubevirt.io/api/core/v1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/local/csidriver"
	"github.com/virtkit/virtkit/virt/storage/dvspec"
)

// TestDataVolumeWaitsForFirstConsumer: in a class of virt-local's driver
// that binds on first consumer, as with CDI's HonorWaitForFirstConsumer (on
// in the CDIConfig virtkit makes), a DataVolume waits in phase
// WaitForFirstConsumer with its claim Pending and no importer pod, while
// one asking for immediate binding imports at once; KubeVirt's virtctl
// uploads only with --force-bind. A CSI clone into that class waits in
// PendingPopulation. A VM whose template's DataVolume is in that class,
// with the clone as a data disk, gets a provisioning pod first, as
// KubeVirt's: the real scheduler picks its node, the driver provisions both
// claims there (the clone by the driver), the pod exits, the import runs,
// the provisioning pod is deleted and the guest boots from the imported
// disk and writes on the cloned one. Nothing is left afterwards.
func TestDataVolumeWaitsForFirstConsumer(t *testing.T) {
	w := up(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	s := guestImageServer(t)
	const ns = "default"
	w.importSecrets(ctx, t, ns, s)
	sc := csidriver.StorageClass("late", false)
	sc.VolumeBindingMode = ptr.To(storagev1.VolumeBindingWaitForFirstConsumer)
	must(t, w.c.Create(ctx, sc))
	t.Cleanup(func() { must(t, client.IgnoreNotFound(w.c.Delete(context.Background(), sc))) })

	blank := func(name string, ann map[string]string) *cdiv1.DataVolume {
		dv := &cdiv1.DataVolume{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: ann},
			Spec: cdiv1.DataVolumeSpec{Source: &cdiv1.DataVolumeSource{Blank: &cdiv1.DataVolumeBlankImage{}},
				Storage: &cdiv1.StorageSpec{StorageClassName: ptr.To(sc.Name), Resources: corev1.VolumeResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("16Mi")}}}}}
		must(t, w.c.Create(ctx, dv))
		return dv
	}
	waiting := blank("waiting", nil)
	forced := blank("forced", map[string]string{dvspec.AnnImmediateBinding: ""})
	w.waitDV(ctx, t, client.ObjectKeyFromObject(forced), "Succeeded, bound by its importer pod", func(dv *cdiv1.DataVolume) bool {
		return dv.Status.Phase == cdiv1.Succeeded
	})
	got := w.waitDV(ctx, t, client.ObjectKeyFromObject(waiting), "WaitForFirstConsumer", func(dv *cdiv1.DataVolume) bool {
		return dv.Status.Phase == cdiv1.WaitForFirstConsumer
	})
	if c := dvCondition(got, cdiv1.DataVolumeBound); c.Status != corev1.ConditionFalse || c.Reason != "Pending" {
		t.Errorf("Bound condition %+v, want False Pending", c)
	}
	pvc := &corev1.PersistentVolumeClaim{}
	must(t, w.c.Get(ctx, client.ObjectKeyFromObject(waiting), pvc))
	var pods corev1.PodList
	must(t, w.c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"cdi.kubevirt.io": "importer"}))
	if pvc.Status.Phase != corev1.ClaimPending || len(pods.Items) != 0 {
		t.Errorf("claim %s with %d importer pods, want Pending with none while it waits for its first consumer", pvc.Status.Phase, len(pods.Items))
	}

	// KubeVirt's virtctl refuses to upload into a DataVolume waiting for
	// its first consumer unless asked to bind it at once.
	image := filepath.Join(t.TempDir(), "five.raw")
	must(t, os.WriteFile(image, markedDisk(5, 8<<20), 0o600))
	upload := func(name string, extra ...string) (string, error) {
		return w.tryVirtctl(ctx, t, append([]string{"image-upload", "dv", name, "--image-path", image, "--size", "16Mi", "--storage-class", sc.Name,
			"--insecure", "--uploadproxy-url", "https://127.0.0.1:" + strconv.Itoa(w.cfg.VirtAPIPort), "-n", ns}, extra...)...)
	}
	if out, err := upload("late-upload"); err == nil || !strings.Contains(out, "cannot upload to DataVolume in WaitForFirstConsumer phase") {
		t.Errorf("uploading into a DataVolume waiting for its first consumer: %v, want it refused, naming the phase", err)
	}
	if out, err := upload("late-forced-upload", "--force-bind"); err != nil || !strings.Contains(out, "completed successfully") {
		t.Errorf("uploading with --force-bind: %v, want it done", err)
	}

	// A CSI clone into the class: the driver clones as a pod binds it.
	cs := cloneSpec(forced.Name, "16Mi")
	cs.Storage.StorageClassName = ptr.To(sc.Name)
	clone := &cdiv1.DataVolume{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "late-clone"}, Spec: cs}
	must(t, w.c.Create(ctx, clone))
	w.waitDV(ctx, t, client.ObjectKeyFromObject(clone), "PendingPopulation", func(dv *cdiv1.DataVolume) bool {
		return dv.Status.Phase == cdiv1.PendingPopulation
	})

	vm := w.readVM(t, "../../examples/manifests/vm-tiny.yaml")
	vm.Name = "late"
	spec := httpSpec(s, "guest.qcow2", "64Mi")
	spec.Storage.StorageClassName = ptr.To(sc.Name)
	vm.Spec.DataVolumeTemplates = []virtv1.DataVolumeTemplateSpec{{ObjectMeta: metav1.ObjectMeta{Name: "late-root"}, Spec: spec}}
	for i, v := range vm.Spec.Template.Spec.Volumes {
		if v.ContainerDisk != nil {
			vm.Spec.Template.Spec.Volumes[i].VolumeSource = virtv1.VolumeSource{DataVolume: &virtv1.DataVolumeSource{Name: "late-root"}}
		}
	}
	sp := &vm.Spec.Template.Spec
	sp.Domain.Devices.Disks = append(sp.Domain.Devices.Disks, virtv1.Disk{Name: "clone", DiskDevice: virtv1.DiskDevice{Disk: &virtv1.DiskTarget{Bus: virtv1.DiskBusVirtio}}})
	sp.Volumes = append(sp.Volumes, virtv1.Volume{Name: "clone", VolumeSource: virtv1.VolumeSource{DataVolume: &virtv1.DataVolumeSource{Name: clone.Name}}})
	must(t, w.c.Create(ctx, vm))
	phases := map[cdiv1.DataVolumePhase]bool{}
	testenv.EventuallyEvery(ctx, t, 50*time.Millisecond, "VM late Running", func() (bool, string) {
		dv := &cdiv1.DataVolume{}
		if err := w.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "late-root"}, dv); err == nil {
			phases[dv.Status.Phase] = true
		}
		got := &virtv1.VirtualMachine{}
		if err := w.c.Get(ctx, client.ObjectKeyFromObject(vm), got); err != nil {
			return false, err.Error()
		}
		return got.Status.PrintableStatus == virtv1.VirtualMachineStatusRunning, fmt.Sprintf("%s, DataVolume phases seen %v", got.Status.PrintableStatus, phases)
	})
	vmi := w.waitRunning(ctx, t, vm)
	log := w.serialLog(ctx, t, vmi)
	waitFile(ctx, t, log, "hello from late")
	// vda is the root, vdb cloud-init's, vdc the clone of a blank disk.
	waitFile(ctx, t, log, "VIRTKIT-DISK vdc previous=none wrote=1 readback=ok")
	w.checkSmartClone(ctx, t, client.ObjectKeyFromObject(clone), "csi-clone", "PersistentVolumeClaim")
	if !phases[cdiv1.WaitForFirstConsumer] {
		t.Errorf("DataVolume phases seen %v: no WaitForFirstConsumer", phases)
	}
	for _, name := range []string{"late-root", clone.Name} {
		must(t, w.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pvc))
		if pvc.Annotations[dvspec.AnnSelectedNode] == "" {
			t.Errorf("claim %s annotations %v: no %s, so no pod's scheduling bound it", name, pvc.Annotations, dvspec.AnnSelectedNode)
		}
	}
	// The provisioning pod was made and deleted, and is gone.
	eventually(ctx, t, "the provisioning pod created and deleted", func() (bool, string) {
		var evs corev1.EventList
		must(t, w.c.List(ctx, &evs, client.InNamespace(ns)))
		var seen []string
		deleted := false
		for _, e := range evs.Items {
			if e.InvolvedObject.UID != vmi.UID {
				continue
			}
			seen = append(seen, e.Reason+": "+e.Message)
			deleted = deleted || (e.Reason == "SuccessfulDelete" && strings.HasPrefix(e.Message, "Deleted WaitForFirstConsumer temporary pod "))
		}
		var pods corev1.PodList
		must(t, w.c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{virtv1.CreatedByLabel: string(vmi.UID)}))
		left := 0
		for _, p := range pods.Items {
			if _, ok := p.Annotations[virtv1.EphemeralProvisioningObject]; ok {
				left++
			}
		}
		return deleted && left == 0, fmt.Sprintf("%d provisioning pods left; events of the VMI: %q", left, seen)
	})

	must(t, w.c.Delete(ctx, vm))
	w.waitNoVMI(ctx, t, vm)
	for _, name := range []string{waiting.Name, forced.Name, clone.Name, "late-upload", "late-forced-upload"} {
		must(t, client.IgnoreNotFound(w.c.Delete(ctx, &cdiv1.DataVolume{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})))
	}
	w.waitNothingLeft(ctx, t, ns)
}
