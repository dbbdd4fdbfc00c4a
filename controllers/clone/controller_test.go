package clone_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	volumesnapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	clonev1 "kubevirt.io/api/clone/v1beta1"
	virtv1 "kubevirt.io/api/core/v1"
	vmsnapshotv1 "kubevirt.io/api/snapshot/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/controllers/clone"
	"github.com/virtkit/virtkit/controllers/snapshot"
	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/internal/testenv/kubeenv"
	vclone "github.com/virtkit/virtkit/virt/clone"
)

// reasons records the reasons of the Normal events about each clone, in
// order: each once.
type reasons struct {
	mu sync.Mutex
	by map[string][]string
}

func (r *reasons) Eventf(obj runtime.Object, typ, reason, _ string, _ ...any) {
	c, ok := obj.(*clonev1.VirtualMachineClone)
	if !ok || typ != corev1.EventTypeNormal {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.by[c.Name] = append(r.by[c.Name], reason)
}

func (r *reasons) of(name string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.by[name]...)
}

// On a real apiserver, with the snapshot and restore controllers and the
// test playing the CSI snapshot controller and the provisioner: a clone of
// a stopped VM takes a snapshot, restores it to a new halted VM without
// the source's MAC, serial and filtered labels, reports KubeVirt's phases,
// events and conditions, and removes its snapshot and restore; a clone of
// a VM snapshot keeps that snapshot; a clone onto an existing VM fails
// naming the field, and one of a missing VM waits for it; deleting a
// clone's target VM deletes the clone.
func TestCloneOfVMAndOfSnapshot(t *testing.T) {
	env := kubeenv.ControlPlane(t)
	mgr := kubeenv.NewManager(t, env)
	events := &reasons{by: map[string][]string{}}
	must(t, snapshot.NewSnapshotReconciler().SetupWithManager(mgr))
	must(t, snapshot.NewRestoreReconciler().SetupWithManager(mgr))
	must(t, clone.New(clone.WithRecorder(events)).SetupWithManager(mgr))
	kubeenv.RunManager(t, mgr)
	c := env.Client
	ctx := testenv.Within(t, 3*time.Minute)
	const ns = "default"

	must(t, c.Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "local"}, Provisioner: "local.csi.virtkit.io"}))
	must(t, c.Create(ctx, &volumesnapshotv1.VolumeSnapshotClass{ObjectMeta: metav1.ObjectMeta{Name: "local"}, Driver: "local.csi.virtkit.io",
		DeletionPolicy: volumesnapshotv1.VolumeSnapshotContentDelete}))
	claim := func(name string) *corev1.PersistentVolumeClaim {
		pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("local"), AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
		must(t, c.Create(ctx, pvc))
		pvc.Status.Phase = corev1.ClaimBound
		must(t, c.Status().Update(ctx, pvc))
		return pvc
	}
	claim("data")
	vmOf := func(name string) *virtv1.VirtualMachine {
		return &virtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "db", "example.com/team": "a"}},
			Spec: virtv1.VirtualMachineSpec{RunStrategy: ptr.To(virtv1.RunStrategyHalted), Template: &virtv1.VirtualMachineInstanceTemplateSpec{
				Spec: virtv1.VirtualMachineInstanceSpec{Domain: virtv1.DomainSpec{
					Firmware: &virtv1.Firmware{Serial: "s1"},
					Devices: virtv1.Devices{Disks: []virtv1.Disk{{Name: "data"}},
						Interfaces: []virtv1.Interface{{Name: "default", MacAddress: "02:00:00:00:00:01", InterfaceBindingMethod: virtv1.InterfaceBindingMethod{Masquerade: &virtv1.InterfaceMasquerade{}}}}}},
					Networks: []virtv1.Network{*virtv1.DefaultPodNetwork()},
					Volumes: []virtv1.Volume{{Name: "data", VolumeSource: virtv1.VolumeSource{PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{
						PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}}}}}}
	}
	must(t, c.Create(ctx, vmOf("db")))

	// The test plays the CSI snapshot controller (every VolumeSnapshot is
	// ready) and the provisioner (every restored claim is bound).
	playStorage := func() {
		var vss volumesnapshotv1.VolumeSnapshotList
		must(t, c.List(ctx, &vss, client.InNamespace(ns)))
		for i := range vss.Items {
			vs := &vss.Items[i]
			if vs.Status == nil || !ptr.Deref(vs.Status.ReadyToUse, false) {
				now := metav1.Now()
				vs.Status = &volumesnapshotv1.VolumeSnapshotStatus{ReadyToUse: ptr.To(true), CreationTime: &now, RestoreSize: ptr.To(resource.MustParse("1Gi"))}
				if err := c.Status().Update(ctx, vs); err != nil && !apierrors.IsConflict(err) {
					t.Fatal(err)
				}
			}
		}
		var pvcs corev1.PersistentVolumeClaimList
		must(t, c.List(ctx, &pvcs, client.InNamespace(ns)))
		for i := range pvcs.Items {
			if p := &pvcs.Items[i]; p.Status.Phase != corev1.ClaimBound {
				p.Status.Phase = corev1.ClaimBound
				if err := c.Status().Update(ctx, p); err != nil && !apierrors.IsConflict(err) {
					t.Fatal(err)
				}
			}
		}
	}
	cloneOf := func(name string, src corev1.TypedLocalObjectReference, target string, mod ...func(*clonev1.VirtualMachineClone)) *clonev1.VirtualMachineClone {
		vc := &clonev1.VirtualMachineClone{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: clonev1.VirtualMachineCloneSpec{Source: &src, Target: &corev1.TypedLocalObjectReference{APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: target}}}
		for _, m := range mod {
			m(vc)
		}
		must(t, c.Create(ctx, vc))
		return vc
	}
	wait := func(vc *clonev1.VirtualMachineClone, what string, ok func(*clonev1.VirtualMachineClone) bool) {
		t.Helper()
		testenv.Eventually(ctx, t, vc.Name+": "+what, func() (bool, string) {
			playStorage()
			if err := c.Get(ctx, client.ObjectKeyFromObject(vc), vc); err != nil {
				return false, err.Error()
			}
			return ok(vc), fmt.Sprintf("%+v", vc.Status)
		})
	}
	condition := func(vc *clonev1.VirtualMachineClone, typ clonev1.ConditionType) clonev1.Condition {
		for _, cond := range vc.Status.Conditions {
			if cond.Type == typ {
				return cond
			}
		}
		return clonev1.Condition{}
	}
	vmRef := func(name string) corev1.TypedLocalObjectReference {
		return corev1.TypedLocalObjectReference{APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: name}
	}

	// A clone of the VM.
	copy1 := cloneOf("copy", vmRef("db"), "db-2", func(vc *clonev1.VirtualMachineClone) {
		vc.Spec.LabelFilters = []string{"*", "!example.com/*"}
	})
	wait(copy1, "Succeeded, its snapshot and restore gone", func(vc *clonev1.VirtualMachineClone) bool {
		return vc.Status.Phase == clonev1.Succeeded && vc.Status.SnapshotName == nil && vc.Status.RestoreName == nil
	})
	if got := ptr.Deref(copy1.Status.TargetName, ""); got != "db-2" {
		t.Errorf("targetName %q, want db-2", got)
	}
	if r, p := condition(copy1, clonev1.ConditionReady), condition(copy1, clonev1.ConditionProgressing); r.Status != corev1.ConditionTrue || r.Reason != "Ready" ||
		p.Status != corev1.ConditionFalse || p.Reason != "Ready" {
		t.Errorf("conditions %+v, want Ready True and Progressing False, both reason Ready", copy1.Status.Conditions)
	}
	want := []string{vclone.ReasonSnapshotCreated, vclone.ReasonSnapshotReady, vclone.ReasonRestoreCreated, vclone.ReasonRestoreReady, vclone.ReasonTargetVMCreated, vclone.ReasonPVCBound}
	if diff := cmp.Diff(want, events.of("copy")); diff != "" {
		t.Errorf("event reasons (-want +got):\n%s", diff)
	}
	target := &virtv1.VirtualMachine{}
	must(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db-2"}, target))
	spec := target.Spec.Template.Spec
	if s, _ := target.RunStrategy(); s != virtv1.RunStrategyHalted {
		t.Errorf("the new VM's run strategy is %s, want Halted", s)
	}
	if diff := cmp.Diff(map[string]string{"app": "db"}, target.Labels); diff != "" {
		t.Errorf("the new VM's labels (-want +got):\n%s", diff)
	}
	if mac, fw := spec.Domain.Devices.Interfaces[0].MacAddress, spec.Domain.Firmware; mac != "" || (fw != nil && fw.Serial != "") {
		t.Errorf("the new VM keeps MAC %q and firmware %+v, want neither", mac, fw)
	}
	claimName := spec.Volumes[0].PersistentVolumeClaim.ClaimName
	restored := &corev1.PersistentVolumeClaim{}
	must(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: claimName}, restored))
	if claimName == "data" || restored.Spec.DataSource == nil || restored.Spec.DataSource.Kind != "VolumeSnapshot" {
		t.Errorf("the new VM's claim %s (data source %+v), want a new one from a VolumeSnapshot", claimName, restored.Spec.DataSource)
	}
	for _, obj := range []client.Object{
		&vmsnapshotv1.VirtualMachineSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: vclone.SnapshotName(copy1.UID)}},
		&vmsnapshotv1.VirtualMachineRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: vclone.RestoreName(copy1.UID)}},
	} {
		testenv.Eventually(ctx, t, "the clone's "+obj.GetName()+" gone", func() (bool, string) {
			err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
	}

	// A clone of a VM snapshot keeps the snapshot.
	monday := &vmsnapshotv1.VirtualMachineSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "monday"},
		Spec: vmsnapshotv1.VirtualMachineSnapshotSpec{Source: vmRef("db")}}
	must(t, c.Create(ctx, monday))
	fromSnap := cloneOf("from-monday", corev1.TypedLocalObjectReference{APIGroup: ptr.To("snapshot.kubevirt.io"), Kind: "VirtualMachineSnapshot", Name: "monday"}, "db-3")
	wait(fromSnap, "Succeeded", func(vc *clonev1.VirtualMachineClone) bool {
		return vc.Status.Phase == clonev1.Succeeded && vc.Status.RestoreName == nil
	})
	must(t, c.Get(ctx, client.ObjectKeyFromObject(monday), monday))
	if monday.DeletionTimestamp != nil {
		t.Errorf("the source snapshot is being deleted")
	}
	if diff := cmp.Diff(append([]string{vclone.ReasonSnapshotReady}, want[2:]...), events.of("from-monday")); diff != "" {
		t.Errorf("event reasons (-want +got):\n%s", diff)
	}

	// Onto an existing VM: fails, naming the field, before any snapshot.
	onto := cloneOf("onto", vmRef("db"), "db-2")
	wait(onto, "Failed", func(vc *clonev1.VirtualMachineClone) bool { return vc.Status.Phase == clonev1.Failed })
	if r := condition(onto, clonev1.ConditionReady); !strings.Contains(r.Reason, "spec.target.name") || !strings.Contains(r.Reason, "db-2") {
		t.Errorf("Ready condition %+v, want its reason to name spec.target.name and db-2", r)
	}
	err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: vclone.SnapshotName(onto.UID)}, &vmsnapshotv1.VirtualMachineSnapshot{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("the failed clone's snapshot: %v, want none", err)
	}

	// Of a VM that is not there yet: waits, then goes on once it is.
	claim("ghost-data")
	later := cloneOf("later", vmRef("ghost"), "ghost-2")
	wait(later, "pending", func(vc *clonev1.VirtualMachineClone) bool {
		p := condition(vc, clonev1.ConditionProgressing)
		return p.Reason == "Pending" && strings.Contains(condition(vc, clonev1.ConditionReady).Reason, "ghost")
	})
	if later.Status.Phase != clonev1.PhaseUnset {
		t.Errorf("a pending clone's phase is %q, want none", later.Status.Phase)
	}
	ghost := vmOf("ghost")
	ghost.Spec.Template.Spec.Volumes[0].PersistentVolumeClaim.ClaimName = "ghost-data"
	must(t, c.Create(ctx, ghost))
	wait(later, "Succeeded once its source is there", func(vc *clonev1.VirtualMachineClone) bool {
		return vc.Status.Phase == clonev1.Succeeded && vc.Status.RestoreName == nil
	})

	// Deleting the target VM deletes its clone, as in KubeVirt.
	must(t, c.Delete(ctx, target))
	testenv.Eventually(ctx, t, "the clone of the deleted VM gone", func() (bool, string) {
		err := c.Get(ctx, client.ObjectKeyFromObject(copy1), &clonev1.VirtualMachineClone{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}
