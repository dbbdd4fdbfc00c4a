package e2e

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	volumesnapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kptr "k8s.io/utils/ptr"
	clonev1 "kubevirt.io/api/clone/v1beta1"
	virtv1 "kubevirt.io/api/core/v1"
	vmsnapshotv1 "kubevirt.io/api/snapshot/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestVMSnapshotAndRestore is the snapshot proof on virt-local's CSI
// storage: the guest writes marker 1 on its claim; an online snapshot
// (Online and GuestAgent: the test guest's agent freezes its file systems
// while the claim is cut, and thaws them after) copies the claim
// and names the containerDisk and cloud-init volumes as left out; its
// disk, downloaded with `virtctl vmexport download --snapshot`, starts with
// marker 1; restored to a new VM with a patched MAC while the original runs, the copy boots
// reading marker 1; the original writes marker 2 on its next boot; a
// restore onto it while it runs is refused; stopped and restored, it reads
// marker 1 again; restored in place (volumeRestorePolicy InPlace), its
// original claim, which held marker 2, is replaced and reads marker 1. An offline snapshot has no indications; one of a VM
// whose claim's class has no VolumeSnapshotClass fails naming the claim;
// deleting the snapshots removes their VolumeSnapshots and copies, and
// deleting the VMs their restored claims.
func TestVMSnapshotAndRestore(t *testing.T) {
	w := up(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	ns := "default"

	vm, pvc := w.tinyWithClaim(ctx, t, ns, "snappy", nil)
	first := w.waitRunning(ctx, t, vm)
	// vda is the containerDisk, vdb cloud-init's, vdc the claim's.
	serial := w.serialLog(ctx, t, first)
	waitFile(ctx, t, serial, "VIRTKIT-DISK vdc previous=none wrote=1 readback=ok")
	w.waitAgent(ctx, t, first)

	// An online snapshot: the guest is frozen while its claim is cut.
	snap := w.snapshotOf(ctx, t, ns, "snappy-1", vm.Name)
	var indications []string
	for _, i := range snap.Status.SourceIndications {
		indications = append(indications, string(i.Indication))
	}
	if got := fmt.Sprint(indications); got != "[GuestAgent Online]" {
		t.Errorf("indications %s, want [GuestAgent Online]", got)
	}
	waitFile(ctx, t, serial, "VIRTKIT-FSFREEZE freeze")
	waitFile(ctx, t, serial, "VIRTKIT-FSFREEZE thaw")
	thawed := &virtv1.VirtualMachineInstance{}
	must(t, w.c.Get(ctx, client.ObjectKeyFromObject(first), thawed))
	if thawed.Status.FSFreezeStatus != "" {
		t.Errorf("after the snapshot the VMI says fsFreezeStatus %q, want none", thawed.Status.FSFreezeStatus)
	}
	if l := snap.Status.SnapshotVolumes; l == nil || fmt.Sprint(l.IncludedVolumes) != "[data]" || len(l.ExcludedVolumes) != len(vm.Spec.Template.Spec.Volumes)-1 {
		t.Errorf("snapshotVolumes %+v: want data included, the other volumes excluded", l)
	}
	content := &vmsnapshotv1.VirtualMachineSnapshotContent{}
	must(t, w.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: *snap.Status.VirtualMachineSnapshotContentName}, content))
	if len(content.Spec.VolumeBackups) != 1 || content.Status == nil || !kptr.Deref(content.Status.ReadyToUse, false) {
		t.Fatalf("content %s: backups %+v status %+v", content.Name, content.Spec.VolumeBackups, content.Status)
	}
	vs := &volumesnapshotv1.VolumeSnapshot{}
	must(t, w.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: *content.Spec.VolumeBackups[0].VolumeSnapshotName}, vs))
	if vs.Status == nil || !kptr.Deref(vs.Status.ReadyToUse, false) || kptr.Deref(vs.Spec.Source.PersistentVolumeClaimName, "") != pvc.Name {
		t.Errorf("VolumeSnapshot %s: spec %+v status %+v", vs.Name, vs.Spec, vs.Status)
	}
	// The controller unlocks the VM right after it writes the snapshot's
	// status: soon, not at the same instant.
	var vmNow virtv1.VirtualMachine
	eventually(ctx, t, "the VM unlocked", func() (bool, string) {
		must(t, w.c.Get(ctx, client.ObjectKeyFromObject(vm), &vmNow))
		return vmNow.Status.SnapshotInProgress == nil, fmt.Sprintf("locked by %v, finalizers %v", vmNow.Status.SnapshotInProgress, vmNow.Finalizers)
	})

	// The snapshot's disk, exported and downloaded with virtctl while the
	// VM runs, carries marker 1 (the link names the backed-up claim); the
	// export's claim goes with the export.
	disk := filepath.Join(t.TempDir(), "snappy-1.img")
	w.virtctlOut(ctx, t, "vmexport", "download", "snappy-1-export", "--snapshot=snappy-1", "--volume="+pvc.Name, "--format=raw", "--output="+disk, "-n", ns)
	f, err := os.Open(disk)
	must(t, err)
	head := make([]byte, 16)
	_, err = io.ReadFull(f, head)
	f.Close()
	must(t, err)
	if string(head) != "VIRTKIT-DATA n=1" {
		t.Errorf("the exported snapshot's disk starts %q, want marker 1", head)
	}
	eventually(ctx, t, "the export's claim gone with it", func() (bool, string) {
		err := w.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "snappy-1-export-" + pvc.Name}, &corev1.PersistentVolumeClaim{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})

	// Restored to a new VM while the original runs, with a MAC of its own.
	mac := "02:00:00:aa:bb:01"
	copyPatch := fmt.Sprintf(`{"op": "add", "path": "/spec/template/spec/domain/devices/interfaces/0/macAddress", "value": %q}`, mac)
	w.restore(ctx, t, ns, "to-copy", "snappy-copy", snap.Name, copyPatch)
	copyVM := &virtv1.VirtualMachine{}
	must(t, w.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "snappy-copy"}, copyVM))
	if s, _ := copyVM.RunStrategy(); s != virtv1.RunStrategyHalted {
		t.Errorf("the new VM's run strategy is %s, want Halted", s)
	}
	w.virtctl(ctx, t, "start", copyVM.Name, "-n", ns)
	copyVMI := w.waitRunning(ctx, t, copyVM)
	waitFile(ctx, t, w.serialLog(ctx, t, copyVMI), "VIRTKIT-DISK vdc previous=1 wrote=2 readback=ok")
	orig := w.waitRunning(ctx, t, vm)
	if len(copyVMI.Status.Interfaces) == 0 || copyVMI.Status.Interfaces[0].MAC != mac ||
		len(orig.Status.Interfaces) == 0 || orig.Status.Interfaces[0].MAC == mac {
		t.Errorf("MACs: copy %+v, original %+v; want the copy's patched and different", copyVMI.Status.Interfaces, orig.Status.Interfaces)
	}

	// The original writes marker 2 at its next boot.
	w.virtctl(ctx, t, "restart", vm.Name, "-n", ns)
	eventually(ctx, t, "the original restarted", func() (bool, string) {
		v := &virtv1.VirtualMachineInstance{}
		err := w.c.Get(ctx, client.ObjectKeyFromObject(vm), v)
		return err == nil && v.UID != first.UID && v.Status.Phase == virtv1.Running, fmt.Sprint(err)
	})
	second := w.waitRunning(ctx, t, vm)
	waitFile(ctx, t, w.serialLog(ctx, t, second), "VIRTKIT-DISK vdc previous=1 wrote=2 readback=ok")

	// A restore onto a running VM is refused.
	err = w.c.Create(ctx, restoreOf(ns, "while-running", vm.Name, snap.Name))
	if err == nil || !strings.Contains(err.Error(), "is running") || !strings.Contains(err.Error(), "spec.target") {
		t.Errorf("a restore onto the running VM: %v, want it refused naming spec.target", err)
	}

	// Stopped, restored, started: the guest reads marker 1 again.
	w.virtctl(ctx, t, "stop", vm.Name, "-n", ns)
	w.waitNoVMI(ctx, t, vm)
	offline := w.snapshotOf(ctx, t, ns, "snappy-2", vm.Name)
	if len(offline.Status.SourceIndications) != 0 {
		t.Errorf("offline snapshot indications %v, want none", offline.Status.SourceIndications)
	}
	w.restore(ctx, t, ns, "back", vm.Name, snap.Name)
	must(t, w.c.Get(ctx, client.ObjectKeyFromObject(vm), &vmNow))
	var restoredClaim string
	for _, v := range vmNow.Spec.Template.Spec.Volumes {
		if v.Name == "data" && v.PersistentVolumeClaim != nil {
			restoredClaim = v.PersistentVolumeClaim.ClaimName
		}
	}
	if restoredClaim == "" || restoredClaim == pvc.Name || vmNow.Status.RestoreInProgress != nil {
		t.Fatalf("restored VM's data volume claim %q (was %q), restoreInProgress %v", restoredClaim, pvc.Name, vmNow.Status.RestoreInProgress)
	}
	w.virtctl(ctx, t, "start", vm.Name, "-n", ns)
	third := w.waitRunning(ctx, t, vm)
	waitFile(ctx, t, w.serialLog(ctx, t, third), "VIRTKIT-DISK vdc previous=1 wrote=2 readback=ok")

	// In place: the snapshot's own claim, which holds marker 2 since the
	// second boot, is replaced under its name by the snapshot's marker 1,
	// and the VM points at it again.
	w.virtctl(ctx, t, "stop", vm.Name, "-n", ns)
	w.waitNoVMI(ctx, t, vm)
	before := &corev1.PersistentVolumeClaim{}
	must(t, w.c.Get(ctx, client.ObjectKeyFromObject(pvc), before))
	w.restoreWith(ctx, t, ns, "in-place", vm.Name, snap.Name, func(r *vmsnapshotv1.VirtualMachineRestore) {
		r.Spec.VolumeRestorePolicy = kptr.To(vmsnapshotv1.VolumeRestorePolicyInPlace)
	})
	after := &corev1.PersistentVolumeClaim{}
	must(t, w.c.Get(ctx, client.ObjectKeyFromObject(pvc), after))
	must(t, w.c.Get(ctx, client.ObjectKeyFromObject(vm), &vmNow))
	if after.UID == before.UID || after.Spec.DataSource == nil || after.Spec.DataSource.Kind != "VolumeSnapshot" {
		t.Errorf("claim %s after an in-place restore: uid %s (was %s), data source %+v; want it replaced from the snapshot", pvc.Name, after.UID, before.UID, after.Spec.DataSource)
	}
	for _, v := range vmNow.Spec.Template.Spec.Volumes {
		if v.Name == "data" && (v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != pvc.Name) {
			t.Errorf("VM's data volume after an in-place restore: %+v, want claim %s", v.VolumeSource, pvc.Name)
		}
	}
	w.virtctl(ctx, t, "start", vm.Name, "-n", ns)
	fourth := w.waitRunning(ctx, t, vm)
	waitFile(ctx, t, w.serialLog(ctx, t, fourth), "VIRTKIT-DISK vdc previous=1 wrote=2 readback=ok")

	// A claim whose class has no VolumeSnapshotClass fails the snapshot,
	// named.
	w.unsnapshottableVM(ctx, t, ns)
	bad := w.waitSnapshot(ctx, t, ns, "lonely-1", "lonely", func(s *vmsnapshotv1.VirtualMachineSnapshot) bool {
		return s.Status != nil && s.Status.Phase == vmsnapshotv1.Failed
	})
	if msg := kptr.Deref(bad.Status.Error, vmsnapshotv1.Error{}).Message; msg == nil || !strings.Contains(*msg, `claim "lonely-data"`) || !strings.Contains(*msg, "no VolumeSnapshotClass") {
		t.Errorf("failed snapshot's error %v, want the claim and the missing VolumeSnapshotClass named", bad.Status.Error)
	}
	failure := false
	for _, c := range bad.Status.Conditions {
		failure = failure || (c.Type == vmsnapshotv1.ConditionFailure && c.Status == corev1.ConditionTrue && strings.Contains(c.Message, "lonely-data"))
	}
	if !failure {
		t.Errorf("failed snapshot's conditions %+v: want Failure naming the claim", bad.Status.Conditions)
	}

	// Nothing is left once everything is deleted.
	for _, name := range []string{"snappy-1", "snappy-2", "lonely-1"} {
		must(t, w.c.Delete(ctx, &vmsnapshotv1.VirtualMachineSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}))
	}
	for _, name := range []string{"to-copy", "back", "in-place"} {
		must(t, w.c.Delete(ctx, &vmsnapshotv1.VirtualMachineRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}))
	}
	for _, name := range []string{vm.Name, copyVM.Name, "lonely"} {
		must(t, w.c.Delete(ctx, &virtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}))
	}
	for _, name := range []string{pvc.Name, "lonely-data"} {
		// The claim restored in place is its VM's and may be gone with it.
		must(t, client.IgnoreNotFound(w.c.Delete(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})))
	}
	// The static volume is Retain: it goes by hand.
	must(t, w.c.Delete(ctx, &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "lonely-volume"}}))
	w.waitStorageEmpty(ctx, t)
}

// snapshotOf takes a snapshot of VM vm and waits until it succeeded.
func (w *world) snapshotOf(ctx context.Context, t *testing.T, ns, name, vm string) *vmsnapshotv1.VirtualMachineSnapshot {
	t.Helper()
	return w.waitSnapshot(ctx, t, ns, name, vm, func(s *vmsnapshotv1.VirtualMachineSnapshot) bool {
		if s.Status != nil && s.Status.Phase == vmsnapshotv1.Failed {
			t.Fatalf("snapshot %s failed: %+v", s.Name, s.Status)
		}
		return s.Status != nil && s.Status.Phase == vmsnapshotv1.Succeeded && kptr.Deref(s.Status.ReadyToUse, false)
	})
}

// waitSnapshot creates a snapshot of VM vm and waits until ok holds.
func (w *world) waitSnapshot(ctx context.Context, t *testing.T, ns, name, vm string, ok func(*vmsnapshotv1.VirtualMachineSnapshot) bool) *vmsnapshotv1.VirtualMachineSnapshot {
	t.Helper()
	s := &vmsnapshotv1.VirtualMachineSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: vmsnapshotv1.VirtualMachineSnapshotSpec{Source: corev1.TypedLocalObjectReference{APIGroup: kptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: vm}}}
	must(t, w.c.Create(ctx, s))
	eventually(ctx, t, "snapshot "+name, func() (bool, string) {
		if err := w.c.Get(ctx, client.ObjectKeyFromObject(s), s); err != nil {
			return false, err.Error()
		}
		return ok(s), fmt.Sprintf("%+v", s.Status)
	})
	return s
}

func restoreOf(ns, name, target, snap string, patches ...string) *vmsnapshotv1.VirtualMachineRestore {
	return &vmsnapshotv1.VirtualMachineRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: vmsnapshotv1.VirtualMachineRestoreSpec{Target: corev1.TypedLocalObjectReference{APIGroup: kptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: target},
			VirtualMachineSnapshotName: snap, Patches: patches}}
}

// restore restores snapshot snap onto VM target and waits until complete.
func (w *world) restore(ctx context.Context, t *testing.T, ns, name, target, snap string, patches ...string) {
	t.Helper()
	w.restoreWith(ctx, t, ns, name, target, snap, func(r *vmsnapshotv1.VirtualMachineRestore) { r.Spec.Patches = patches })
}

// restoreWith is restore of a VirtualMachineRestore change has changed.
func (w *world) restoreWith(ctx context.Context, t *testing.T, ns, name, target, snap string, change func(*vmsnapshotv1.VirtualMachineRestore)) {
	t.Helper()
	r := restoreOf(ns, name, target, snap)
	change(r)
	must(t, w.c.Create(ctx, r))
	eventually(ctx, t, "restore "+name+" complete", func() (bool, string) {
		if err := w.c.Get(ctx, client.ObjectKeyFromObject(r), r); err != nil {
			return false, err.Error()
		}
		if r.Status != nil {
			for _, c := range r.Status.Conditions {
				if c.Type == vmsnapshotv1.ConditionFailure && c.Status == corev1.ConditionTrue {
					t.Fatalf("restore %s failed: %s", name, c.Message)
				}
			}
		}
		return r.Status != nil && kptr.Deref(r.Status.Complete, false), fmt.Sprintf("%+v", r.Status)
	})
}

// unsnapshottableVM makes a halted VM "lonely" whose data claim is bound
// to a static volume of a class no VolumeSnapshotClass serves.
func (w *world) unsnapshottableVM(ctx context.Context, t *testing.T, ns string) {
	t.Helper()
	class := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "no-snapshots"}, Provisioner: "example.com/none",
		VolumeBindingMode: kptr.To(storagev1.VolumeBindingImmediate)}
	if err := w.c.Create(ctx, class); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.c.Delete(context.Background(), class) })
	dir := filepath.Join(w.data, "lonely-volume")
	must(t, os.MkdirAll(dir, 0o777))
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "lonely-volume"},
		Spec: corev1.PersistentVolumeSpec{StorageClassName: class.Name, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir}},
			ClaimRef:                      &corev1.ObjectReference{Namespace: ns, Name: "lonely-data"}}}
	must(t, w.c.Create(ctx, pv))
	t.Cleanup(func() { _ = w.c.Delete(context.Background(), pv) })
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lonely-data"},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: kptr.To(class.Name), VolumeName: pv.Name,
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")}}}}
	must(t, w.c.Create(ctx, claim))
	eventually(ctx, t, "claim lonely-data bound", func() (bool, string) {
		err := w.c.Get(ctx, client.ObjectKeyFromObject(claim), claim)
		return err == nil && claim.Status.Phase == corev1.ClaimBound, fmt.Sprint(claim.Status.Phase, err)
	})
	vm := w.readVM(t, "../../examples/manifests/vm-tiny.yaml")
	vm.Name = "lonely"
	vm.Spec.Running, vm.Spec.RunStrategy = nil, kptr.To(virtv1.RunStrategyHalted)
	vm.Spec.Template.Spec.Domain.Devices.Disks = append(vm.Spec.Template.Spec.Domain.Devices.Disks, virtv1.Disk{Name: "data",
		DiskDevice: virtv1.DiskDevice{Disk: &virtv1.DiskTarget{Bus: virtv1.DiskBusVirtio}}})
	vm.Spec.Template.Spec.Volumes = append(vm.Spec.Template.Spec.Volumes, virtv1.Volume{Name: "data", VolumeSource: virtv1.VolumeSource{
		PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim.Name}}}})
	must(t, w.c.Create(ctx, vm))
}

// tinyWithClaim makes a 64 MiB claim NAME-data and the VM NAME of
// examples/manifests/vm-tiny.yaml with it as its third disk, data (vdc in
// the guest), changed first by mod when given.
func (w *world) tinyWithClaim(ctx context.Context, t *testing.T, ns, name string, mod func(*virtv1.VirtualMachine)) (*virtv1.VirtualMachine, *corev1.PersistentVolumeClaim) {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-data"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")}}}}
	must(t, w.c.Create(ctx, pvc))
	vm := w.readVM(t, "../../examples/manifests/vm-tiny.yaml")
	vm.Name = name
	vm.Spec.Template.Spec.Domain.Devices.Disks = append(vm.Spec.Template.Spec.Domain.Devices.Disks, virtv1.Disk{Name: "data",
		DiskDevice: virtv1.DiskDevice{Disk: &virtv1.DiskTarget{Bus: virtv1.DiskBusVirtio}}})
	vm.Spec.Template.Spec.Volumes = append(vm.Spec.Template.Spec.Volumes, virtv1.Volume{Name: "data", VolumeSource: virtv1.VolumeSource{
		PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: pvc.Name}}}})
	if mod != nil {
		mod(vm)
	}
	must(t, w.c.Create(ctx, vm))
	return vm, pvc
}

// waitStorageEmpty waits until the cluster holds no VM, clone, VM
// snapshot, content or restore, VolumeSnapshot or its content, claim or
// volume, and virt-local's CSI driver no volume folder or snapshot copy.
func (w *world) waitStorageEmpty(ctx context.Context, t *testing.T) {
	t.Helper()
	eventually(ctx, t, "no VM, clone, snapshot, content, restore, VolumeSnapshot, claim, volume or copy left", func() (bool, string) {
		lists := []struct {
			what string
			l    client.ObjectList
		}{
			{"VMs", &virtv1.VirtualMachineList{}}, {"clones", &clonev1.VirtualMachineCloneList{}},
			{"snapshots", &vmsnapshotv1.VirtualMachineSnapshotList{}}, {"contents", &vmsnapshotv1.VirtualMachineSnapshotContentList{}},
			{"restores", &vmsnapshotv1.VirtualMachineRestoreList{}}, {"VolumeSnapshots", &volumesnapshotv1.VolumeSnapshotList{}},
			{"VolumeSnapshotContents", &volumesnapshotv1.VolumeSnapshotContentList{}}, {"claims", &corev1.PersistentVolumeClaimList{}},
			{"volumes", &corev1.PersistentVolumeList{}},
		}
		n, state := 0, ""
		for _, x := range lists {
			must(t, w.c.List(ctx, x.l))
			k := meta.LenList(x.l)
			n += k
			state += fmt.Sprintf("%d %s, ", k, x.what)
		}
		for _, dir := range []string{"snapshots", "volumes"} {
			entries, _ := os.ReadDir(filepath.Join(w.data, "csi", dir))
			n += len(entries)
			state += fmt.Sprintf("%d CSI %s folders, ", len(entries), dir)
		}
		return n == 0, strings.TrimSuffix(state, ", ")
	})
}
