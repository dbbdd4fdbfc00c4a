package e2e

import (
	"context"
	"fmt"
	"os"
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

	"github.com/virtkit/virtkit/local/cluster"
	"github.com/virtkit/virtkit/local/csidriver"
)

// TestPVCKeepsData is the persistence proof: a VM with a data disk on a
// PVC (bound by virt-local's folder provisioner) and one on a hostDisk (the
// KubeVirt CR enabling the HostDisk feature gate) keeps what the guest wrote
// on both across `virtctl stop` and `virtctl start`. The hostDisk's image
// is made in its folder on the node, which the launcher pod mounts as a
// hostPath volume; deleting the VM and the claim removes the claim's
// folder and leaves the hostDisk's image. Its cloud-init user data comes
// from a Secret, which reaches the handler through the launcher pod's
// secret volume (the handler reads no Secrets).
func TestPVCKeepsData(t *testing.T) {
	w := up(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()

	var kvs virtv1.KubeVirtList
	must(t, w.c.List(ctx, &kvs))
	if len(kvs.Items) != 1 {
		t.Fatalf("%d KubeVirt CRs, want the one virt-local installs", len(kvs.Items))
	}
	kv := &kvs.Items[0]
	if kv.Spec.Configuration.DeveloperConfiguration == nil {
		kv.Spec.Configuration.DeveloperConfiguration = &virtv1.DeveloperConfiguration{}
	}
	kv.Spec.Configuration.DeveloperConfiguration.FeatureGates = append(kv.Spec.Configuration.DeveloperConfiguration.FeatureGates, "HostDisk")
	must(t, w.c.Update(ctx, kv))
	hostImg := filepath.Join(w.data, "hostdisks", "keeper.img")

	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "keeper-data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")}},
		},
	}
	must(t, w.c.Create(ctx, pvc))
	vm := w.readVM(t, "../../examples/manifests/vm-tiny.yaml")
	vm.Name = "keeper"
	spec := &vm.Spec.Template.Spec
	userData := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "keeper-userdata"},
		Data: map[string][]byte{"userdata": []byte("#!/bin/sh\necho \"user data from a secret on $(hostname)\"\n")}}
	must(t, w.c.Create(ctx, userData))
	for i := range spec.Volumes {
		if ci := spec.Volumes[i].CloudInitNoCloud; ci != nil {
			ci.UserData, ci.UserDataSecretRef = "", &corev1.LocalObjectReference{Name: userData.Name}
		}
	}
	spec.Domain.Devices.Disks = append(spec.Domain.Devices.Disks, virtv1.Disk{Name: "data",
		DiskDevice: virtv1.DiskDevice{Disk: &virtv1.DiskTarget{Bus: virtv1.DiskBusVirtio}}})
	spec.Volumes = append(spec.Volumes, virtv1.Volume{Name: "data", VolumeSource: virtv1.VolumeSource{
		PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: pvc.Name}}}})
	spec.Domain.Devices.Disks = append(spec.Domain.Devices.Disks, virtv1.Disk{Name: "host",
		DiskDevice: virtv1.DiskDevice{Disk: &virtv1.DiskTarget{Bus: virtv1.DiskBusVirtio}}})
	spec.Volumes = append(spec.Volumes, virtv1.Volume{Name: "host", VolumeSource: virtv1.VolumeSource{
		HostDisk: &virtv1.HostDisk{Path: hostImg, Type: virtv1.HostDiskExistsOrCreate, Capacity: resource.MustParse("16Mi")}}})
	must(t, w.c.Create(ctx, vm))

	first := w.waitRunning(ctx, t, vm)
	firstLog := w.serialLog(ctx, t, first)
	waitFile(ctx, t, firstLog, "user data from a secret on keeper")
	// vda is the containerDisk, vdb cloud-init's, vdc the claim's, vdd the hostDisk's.
	waitFile(ctx, t, firstLog, "VIRTKIT-DISK vdc previous=none wrote=1 readback=ok")
	waitFile(ctx, t, firstLog, "VIRTKIT-DISK vdd previous=none wrote=1 readback=ok")
	if st, err := os.Stat(hostImg); err != nil || st.Size() != 16<<20 {
		t.Fatalf("the hostDisk's image on the node: %v, %v; want 16 MiB", st, err)
	}

	// The claim is Bound to a CSI volume of virt-local's driver, a folder
	// of the data directory holding the disk.img virt-handler made for it.
	must(t, w.c.Get(ctx, client.ObjectKeyFromObject(pvc), pvc))
	if pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName != cluster.StorageClassName {
		t.Fatalf("claim phase %s, class %v; want Bound, of the default class %q", pvc.Status.Phase, pvc.Spec.StorageClassName, cluster.StorageClassName)
	}
	var pv corev1.PersistentVolume
	must(t, w.c.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, &pv))
	if pv.Spec.CSI == nil || pv.Spec.CSI.Driver != csidriver.Name {
		t.Fatalf("volume %s: %+v; want a CSI volume of %s", pv.Name, pv.Spec.PersistentVolumeSource, csidriver.Name)
	}
	data := csidriver.VolumeData(filepath.Join(w.data, "csi"), pv.Spec.CSI.VolumeHandle, false)
	folder := filepath.Dir(data)
	if st, err := os.Stat(filepath.Join(data, "disk.img")); err != nil || st.Size() == 0 {
		t.Fatalf("disk.img in the claim's folder: %v, %v", st, err)
	}

	w.virtctl(ctx, t, "stop", vm.Name, "-n", vm.Namespace)
	waitFile(ctx, t, firstLog, "VIRTKIT-POWEROFF")
	w.waitNoVMI(ctx, t, vm)
	w.virtctl(ctx, t, "start", vm.Name, "-n", vm.Namespace)
	second := w.waitRunning(ctx, t, vm)
	if second.UID == first.UID {
		t.Fatal("the VMI after start is the old one")
	}
	// The guest finds its own markers from the first boot.
	secondLog := w.serialLog(ctx, t, second)
	waitFile(ctx, t, secondLog, "VIRTKIT-DISK vdc previous=1 wrote=2 readback=ok")
	waitFile(ctx, t, secondLog, "VIRTKIT-DISK vdd previous=1 wrote=2 readback=ok")
	if b, err := os.ReadFile(hostImg); err != nil || !strings.HasPrefix(string(b), "VIRTKIT-DATA n=2\n") {
		t.Errorf("the hostDisk's image on the node does not hold the guest's marker: %.20q, %v", b, err)
	}

	must(t, w.c.Delete(ctx, vm))
	w.waitNoVMI(ctx, t, vm)
	must(t, w.c.Delete(ctx, pvc))
	eventually(ctx, t, "the claim, its volume and its folder gone", func() (bool, string) {
		var pvs corev1.PersistentVolumeList
		must(t, w.c.List(ctx, &pvs))
		cerr := w.c.Get(ctx, client.ObjectKeyFromObject(pvc), &corev1.PersistentVolumeClaim{})
		_, ferr := os.Stat(folder)
		return len(pvs.Items) == 0 && apierrors.IsNotFound(cerr) && os.IsNotExist(ferr),
			fmt.Sprintf("%d volumes, claim: %v, folder: %v", len(pvs.Items), cerr, ferr)
	})
}
