package datavolume

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	volumesnapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/virt/storage/dvspec"
)

// profile makes StorageClass name of provisioner prov, with a
// StorageProfile whose status says strategy (and snapClass).
func (cl *cluster) profile(ctx context.Context, t *testing.T, name, prov string, strategy cdiv1.CDICloneStrategy, snapClass string) {
	t.Helper()
	if err := cl.c.Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: prov,
		AllowVolumeExpansion: ptr.To(true)}); err != nil {
		t.Fatal(err)
	}
	sp := &cdiv1.StorageProfile{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := cl.c.Create(ctx, sp); err != nil {
		t.Fatal(err)
	}
	sp.Status.CloneStrategy = &strategy
	if snapClass != "" {
		sp.Status.SnapshotClass = &snapClass
	}
	if err := cl.c.Status().Update(ctx, sp); err != nil {
		t.Fatal(err)
	}
}

// cloneDV is a DataVolume cloning claim source of its namespace into class,
// with the source's size.
func cloneDV(ns, name, source, class string) *cdiv1.DataVolume {
	return &cdiv1.DataVolume{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: cdiv1.DataVolumeSpec{Source: &cdiv1.DataVolumeSource{PVC: &cdiv1.DataVolumeSourcePVC{Namespace: ns, Name: source}},
			Storage: &cdiv1.StorageSpec{StorageClassName: &class}}}
}

// waitClaim waits for the claim key and returns it.
func (cl *cluster) waitClaim(ctx context.Context, t *testing.T, key client.ObjectKey) *corev1.PersistentVolumeClaim {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{}
	testenv.Eventually(ctx, t, "the claim "+key.String(), func() (bool, string) {
		err := cl.c.Get(ctx, key, pvc)
		return err == nil, fmt.Sprint(err)
	})
	return pvc
}

// noImporter checks that no pod fills the claim of key.
func (cl *cluster) noImporter(ctx context.Context, t *testing.T, key client.ObjectKey) {
	t.Helper()
	var pods corev1.PodList
	if err := cl.c.List(ctx, &pods, client.InNamespace(key.Namespace)); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Labels[dvspec.LabelApp] == dvspec.AppCDI && strings.HasSuffix(p.Name, "-"+key.Name) {
			t.Errorf("pod %s made for a clone the storage makes", p.Name)
		}
	}
}

// TestSmartClones: where the StorageProfile of the target's class says
// csi-clone or snapshot and the storage can honour it, the claim is made
// by the storage (test plays the provisioner and the snapshotter): a CSI
// clone names its source as data source, once no pod uses it; a snapshot
// clone first snapshots the source, makes its claim from the snapshot once
// it is ready, and deletes it when the claim is bound. Neither runs a pod.
// Where the storage cannot (another driver), the disk is copied by a pod,
// with CDI's warning.
func TestSmartClones(t *testing.T) {
	cl := startCluster(t)
	ctx := testenv.Within(t, 90*time.Second)
	ns := cl.namespace(t, "smart")
	cl.profile(ctx, t, "fast", "csi.example.com", cdiv1.CloneStrategyCsiClone, "")
	cl.profile(ctx, t, "snappy", "csi.example.com", cdiv1.CloneStrategySnapshot, "snaps")
	cl.profile(ctx, t, "elsewhere", "nfs.example.com", cdiv1.CloneStrategyCsiClone, "")
	golden := cl.sourceClaim(ctx, t, ns, "golden", "fast")
	user := cl.usedBy(ctx, t, ns, "golden")

	// CSI clone: no claim while the source is in use.
	csi := cloneDV(ns, "csi", "golden", "fast")
	if err := cl.c.Create(ctx, csi); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(csi)
	testenv.Eventually(ctx, t, "the clone waits for its source", func() (bool, string) {
		got := cl.dv(ctx, t, key)
		c := condition(got, cdiv1.DataVolumeRunning)
		return c != nil && c.Reason == ReasonCloneSourceInUse && got.Status.Phase == cdiv1.Pending, fmt.Sprintf("%+v", got.Status)
	})
	if err := cl.c.Get(ctx, key, &corev1.PersistentVolumeClaim{}); !apierrors.IsNotFound(err) {
		t.Errorf("a CSI clone's claim made while its source is in use (%v)", err)
	}
	if err := cl.c.Delete(ctx, user, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	cl.waitPhase(ctx, t, key, cdiv1.CSICloneInProgress)
	pvc := cl.waitClaim(ctx, t, key)
	if ds := pvc.Spec.DataSource; ds == nil || ds.Kind != "PersistentVolumeClaim" || ds.Name != "golden" || pvc.Annotations[dvspec.AnnCloneType] != "csi-clone" {
		t.Errorf("CSI clone's claim: data source %+v, annotations %v", ds, pvc.Annotations)
	}
	if got := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; got.Cmp(resource.MustParse("64Mi")) != 0 {
		t.Errorf("CSI clone's claim asks for %s, want its source's 64Mi", got.String())
	}
	cl.bind(ctx, t, key)
	cl.waitPhase(ctx, t, key, cdiv1.Succeeded)
	if pvc := cl.waitClaim(ctx, t, key); pvc.Annotations[dvspec.AnnPopulatedFor] != "csi" {
		t.Errorf("CSI clone's claim annotations %v: not marked filled", pvc.Annotations)
	}
	cl.noImporter(ctx, t, key)
	wantEvents(t, cl.events, string(cdiv1.CSICloneInProgress), ReasonCloneSucceeded)

	// Snapshot clone.
	snapDV := cloneDV(ns, "snap", "golden", "snappy")
	if err := cl.c.Create(ctx, snapDV); err != nil {
		t.Fatal(err)
	}
	key = client.ObjectKeyFromObject(snapDV)
	got := cl.waitPhase(ctx, t, key, cdiv1.SnapshotForSmartCloneInProgress)
	snap := &volumesnapshotv1.VolumeSnapshot{}
	skey := client.ObjectKey{Namespace: ns, Name: dvspec.CloneSnapshotName(got.UID)}
	if err := cl.c.Get(ctx, skey, snap); err != nil {
		t.Fatal(err)
	}
	if ptr.Deref(snap.Spec.Source.PersistentVolumeClaimName, "") != "golden" || ptr.Deref(snap.Spec.VolumeSnapshotClassName, "") != "snaps" || !metav1.IsControlledBy(snap, got) {
		t.Errorf("clone's snapshot: %+v, owners %+v", snap.Spec, snap.OwnerReferences)
	}
	if err := cl.c.Get(ctx, key, &corev1.PersistentVolumeClaim{}); !apierrors.IsNotFound(err) {
		t.Errorf("a snapshot clone's claim made before its snapshot is ready (%v)", err)
	}
	snap.Status = &volumesnapshotv1.VolumeSnapshotStatus{ReadyToUse: ptr.To(true)}
	if err := cl.c.Status().Update(ctx, snap); err != nil {
		t.Fatal(err)
	}
	cl.waitPhase(ctx, t, key, cdiv1.CloneFromSnapshotSourceInProgress)
	pvc = cl.waitClaim(ctx, t, key)
	if ds := pvc.Spec.DataSource; ds == nil || ds.Kind != "VolumeSnapshot" || ds.Name != skey.Name || ptr.Deref(ds.APIGroup, "") != volumesnapshotv1.GroupName {
		t.Errorf("snapshot clone's claim: data source %+v", ds)
	}
	cl.bind(ctx, t, key)
	cl.waitPhase(ctx, t, key, cdiv1.Succeeded)
	if err := cl.c.Get(ctx, skey, &volumesnapshotv1.VolumeSnapshot{}); !apierrors.IsNotFound(err) {
		t.Errorf("the clone's snapshot is kept after its claim is made (%v)", err)
	}
	cl.noImporter(ctx, t, key)
	wantEvents(t, cl.events, string(cdiv1.SnapshotForSmartCloneInProgress), string(cdiv1.CloneFromSnapshotSourceInProgress), ReasonCloneSucceeded)

	// Another driver: copied, with CDI's warning.
	other := cloneDV(ns, "other", "golden", "elsewhere")
	if err := cl.c.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	key = client.ObjectKeyFromObject(other)
	if pvc := cl.waitClaim(ctx, t, key); pvc.Spec.DataSource != nil || pvc.Annotations[dvspec.AnnCloneType] != "copy" {
		t.Errorf("copied clone's claim: data source %+v, annotations %v", pvc.Spec.DataSource, pvc.Annotations)
	}
	wantEvents(t, cl.events, dvspec.ReasonIncompatibleProvisioners)
	cl.bind(ctx, t, key)
	cl.waitPhase(ctx, t, key, cdiv1.CloneScheduled)

	// A block claim, which virtkit cannot copy, the storage clones.
	block := corev1.PersistentVolumeBlock
	raw := golden.DeepCopy()
	raw.ObjectMeta = metav1.ObjectMeta{Namespace: ns, Name: "raw"}
	raw.Spec.VolumeMode = &block
	if err := cl.c.Create(ctx, raw); err != nil {
		t.Fatal(err)
	}
	cl.bind(ctx, t, client.ObjectKeyFromObject(raw))
	rawClone := cloneDV(ns, "raw-clone", "raw", "fast")
	rawClone.Spec.Storage.VolumeMode = &block
	if err := cl.c.Create(ctx, rawClone); err != nil {
		t.Fatal(err)
	}
	key = client.ObjectKeyFromObject(rawClone)
	cl.waitPhase(ctx, t, key, cdiv1.CSICloneInProgress)
	cl.bind(ctx, t, key)
	cl.waitPhase(ctx, t, key, cdiv1.Succeeded)
	cl.noImporter(ctx, t, key)
}

// TestCloneStrategyOverride: the CDI resource's cloneStrategyOverride
// comes before a profile's csi-clone: the clone is copied.
func TestCloneStrategyOverride(t *testing.T) {
	cl := startCluster(t)
	ctx := testenv.Within(t, 60*time.Second)
	ns := cl.namespace(t, "override")
	cl.profile(ctx, t, "fast", "csi.example.com", cdiv1.CloneStrategyCsiClone, "")
	cl.sourceClaim(ctx, t, ns, "golden", "fast")
	copyAll := cdiv1.CloneStrategyHostAssisted
	if err := cl.c.Create(ctx, &cdiv1.CDI{ObjectMeta: metav1.ObjectMeta{Name: "cdi"}, Spec: cdiv1.CDISpec{CloneStrategyOverride: &copyAll}}); err != nil {
		t.Fatal(err)
	}
	dv := cloneDV(ns, "overridden", "golden", "fast")
	if err := cl.c.Create(ctx, dv); err != nil {
		t.Fatal(err)
	}
	if pvc := cl.waitClaim(ctx, t, client.ObjectKeyFromObject(dv)); pvc.Spec.DataSource != nil || pvc.Annotations[dvspec.AnnCloneType] != "copy" {
		t.Errorf("clone's claim under a copy override: data source %+v, annotations %v", pvc.Spec.DataSource, pvc.Annotations)
	}
}

// TestSnapshotSources: a DataVolume whose source is a VolumeSnapshot, named
// or through a DataSource, waits until the snapshot is ready, then gets a
// claim restored from it by the storage, of the snapshot's restore size
// when it names none (CloneFromSnapshotSourceInProgress, then Succeeded
// once bound); the user's snapshot is kept. A snapshot whose driver is not
// the target class's provisioner is not restored, with the reason.
func TestSnapshotSources(t *testing.T) {
	cl := startCluster(t)
	ctx := testenv.Within(t, 90*time.Second)
	ns := cl.namespace(t, "restores")
	cl.profile(ctx, t, "fast", "csi.example.com", cdiv1.CloneStrategyCsiClone, "")
	cl.profile(ctx, t, "elsewhere", "nfs.example.com", cdiv1.CloneStrategyCsiClone, "")
	if err := cl.c.Create(ctx, &volumesnapshotv1.VolumeSnapshotClass{ObjectMeta: metav1.ObjectMeta{Name: "fast-snaps"}, Driver: "csi.example.com",
		DeletionPolicy: volumesnapshotv1.VolumeSnapshotContentDelete}); err != nil {
		t.Fatal(err)
	}
	snap := &volumesnapshotv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "golden-snap"},
		Spec: volumesnapshotv1.VolumeSnapshotSpec{Source: volumesnapshotv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr.To("golden")},
			VolumeSnapshotClassName: ptr.To("fast-snaps")}}
	if err := cl.c.Create(ctx, snap); err != nil {
		t.Fatal(err)
	}
	restore := func(name, class string, viaDataSource bool) *cdiv1.DataVolume {
		dv := &cdiv1.DataVolume{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: cdiv1.DataVolumeSpec{Source: &cdiv1.DataVolumeSource{Snapshot: &cdiv1.DataVolumeSourceSnapshot{Name: snap.Name}},
				Storage: &cdiv1.StorageSpec{StorageClassName: &class}}}
		if viaDataSource {
			dv.Spec.Source = nil
			dv.Spec.SourceRef = &cdiv1.DataVolumeSourceRef{Kind: cdiv1.DataVolumeDataSource, Name: "golden"}
		}
		if err := cl.c.Create(ctx, dv); err != nil {
			t.Fatal(err)
		}
		return dv
	}
	if err := cl.c.Create(ctx, &cdiv1.DataSource{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "golden"},
		Spec: cdiv1.DataSourceSpec{Source: cdiv1.DataSourceSource{Snapshot: &cdiv1.DataVolumeSourceSnapshot{Name: snap.Name}}}}); err != nil {
		t.Fatal(err)
	}
	waitRunning := func(key client.ObjectKey, reason, text string) {
		t.Helper()
		testenv.Eventually(ctx, t, key.String()+" waits: "+reason, func() (bool, string) {
			got := cl.dv(ctx, t, key)
			c := condition(got, cdiv1.DataVolumeRunning)
			return c != nil && c.Reason == reason && strings.Contains(c.Message, text), fmt.Sprintf("%+v", got.Status)
		})
	}
	named, viaDS := restore("named", "fast", false), restore("via-datasource", "fast", true)
	for _, dv := range []*cdiv1.DataVolume{named, viaDS} {
		waitRunning(client.ObjectKeyFromObject(dv), ReasonCloneNoSource, "is not ready to use")
	}
	snap.Status = &volumesnapshotv1.VolumeSnapshotStatus{ReadyToUse: ptr.To(true), RestoreSize: ptr.To(resource.MustParse("80Mi"))}
	if err := cl.c.Status().Update(ctx, snap); err != nil {
		t.Fatal(err)
	}
	for _, dv := range []*cdiv1.DataVolume{named, viaDS} {
		key := client.ObjectKeyFromObject(dv)
		cl.waitPhase(ctx, t, key, cdiv1.CloneFromSnapshotSourceInProgress)
		pvc := cl.waitClaim(ctx, t, key)
		if ds := pvc.Spec.DataSource; ds == nil || ds.Kind != "VolumeSnapshot" || ds.Name != snap.Name {
			t.Errorf("%s: claim's data source %+v, want the snapshot", key, ds)
		}
		if got := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; got.Cmp(resource.MustParse("80Mi")) != 0 {
			t.Errorf("%s: claim asks for %s, want the snapshot's restore size 80Mi", key, got.String())
		}
		cl.bind(ctx, t, key)
		cl.waitPhase(ctx, t, key, cdiv1.Succeeded)
		cl.noImporter(ctx, t, key)
	}
	if err := cl.c.Get(ctx, client.ObjectKeyFromObject(snap), &volumesnapshotv1.VolumeSnapshot{}); err != nil {
		t.Errorf("the user's snapshot: %v", err)
	}

	other := restore("other-driver", "elsewhere", false)
	key := client.ObjectKeyFromObject(other)
	waitRunning(key, dvspec.ReasonIncompatibleProvisioners, "of driver csi.example.com cannot be restored into StorageClass elsewhere")
	if err := cl.c.Get(ctx, key, &corev1.PersistentVolumeClaim{}); !apierrors.IsNotFound(err) {
		t.Errorf("a claim made for a snapshot its class cannot restore (%v)", err)
	}
}

// TestCSICloneAcrossNamespaces: a CSI clone into another namespace is
// cloned into a claim of the source's namespace, held by the clone
// finalizer; once bound (the test plays the provisioner and the binder),
// the DataVolume's claim names its volume and the volume's claimRef is
// pointed at it; once that claim is bound the DataVolume Succeeded, and
// neither the claim in the source's namespace nor the finalizer is left.
// A VolumeSnapshot of another namespace is restored the same way.
func TestCSICloneAcrossNamespaces(t *testing.T) {
	cl := startCluster(t)
	ctx := testenv.Within(t, 90*time.Second)
	src, dst := cl.namespace(t, "golden"), cl.namespace(t, "vms")
	cl.profile(ctx, t, "fast", "csi.example.com", cdiv1.CloneStrategyCsiClone, "")
	cl.sourceClaim(ctx, t, src, "golden", "fast")
	dv := cloneDV(dst, "copy", "golden", "fast")
	dv.Spec.Source.PVC.Namespace = src
	cl.transfer(ctx, t, dv, cdiv1.CSICloneInProgress, "PersistentVolumeClaim", "golden")

	snap := &volumesnapshotv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: src, Name: "golden-snap"},
		Spec: volumesnapshotv1.VolumeSnapshotSpec{Source: volumesnapshotv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr.To("golden")}}}
	if err := cl.c.Create(ctx, snap); err != nil {
		t.Fatal(err)
	}
	snap.Status = &volumesnapshotv1.VolumeSnapshotStatus{ReadyToUse: ptr.To(true), RestoreSize: ptr.To(resource.MustParse("64Mi"))}
	if err := cl.c.Status().Update(ctx, snap); err != nil {
		t.Fatal(err)
	}
	restored := cloneDV(dst, "restored", "", "fast")
	restored.Spec.Source = &cdiv1.DataVolumeSource{Snapshot: &cdiv1.DataVolumeSourceSnapshot{Namespace: src, Name: snap.Name}}
	cl.transfer(ctx, t, restored, cdiv1.CloneFromSnapshotSourceInProgress, "VolumeSnapshot", snap.Name)
}

// transfer creates dv, whose source is of another namespace, and plays
// the provisioner and the binder through its transfer: it checks the
// claim made in the source's namespace (from a data source of kind,
// name), its phase while that and the DataVolume's claim are made, the
// volume handed over, and that nothing is left in the source's namespace.
func (cl *cluster) transfer(ctx context.Context, t *testing.T, dv *cdiv1.DataVolume, phase cdiv1.DataVolumePhase, kind, name string) {
	t.Helper()
	if err := cl.c.Create(ctx, dv); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(dv)
	got := cl.waitPhase(ctx, t, key, phase)
	src := got.Annotations[AnnCloneSourceNamespace]
	if !controllerutil.ContainsFinalizer(got, CloneFinalizer) || src == "" || src == key.Namespace {
		t.Fatalf("DataVolume finalizers %v, annotations %v: want %s and the source's namespace", got.Finalizers, got.Annotations, CloneFinalizer)
	}
	tmpKey := client.ObjectKey{Namespace: src, Name: dvspec.TransferClaimName(got.UID)}
	tmp := cl.waitClaim(ctx, t, tmpKey)
	if ds := tmp.Spec.DataSource; ds == nil || ds.Kind != kind || ds.Name != name || ptr.Deref(tmp.Spec.StorageClassName, "") != "fast" {
		t.Fatalf("the claim in %s: data source %+v, class %v; want the %s %s", src, ds, tmp.Spec.StorageClassName, kind, name)
	}
	if err := cl.c.Get(ctx, key, &corev1.PersistentVolumeClaim{}); !apierrors.IsNotFound(err) {
		t.Errorf("the DataVolume's claim made before the one in %s is bound (%v)", src, err)
	}

	// The provisioner: a volume bound to the claim in src.
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-" + key.Name},
		Spec: corev1.PersistentVolumeSpec{Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")},
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: "fast",
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "csi.example.com", VolumeHandle: "v-" + key.Name}},
			ClaimRef:               &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: src, Name: tmp.Name, UID: tmp.UID}}}
	if err := cl.c.Create(ctx, pv); err != nil {
		t.Fatal(err)
	}
	tmp.Spec.VolumeName = pv.Name
	if err := cl.c.Update(ctx, tmp); err != nil {
		t.Fatal(err)
	}
	cl.bind(ctx, t, tmpKey)

	pvc := cl.waitClaim(ctx, t, key)
	if pvc.Spec.VolumeName != pv.Name || pvc.Spec.DataSource != nil || pvc.Annotations[dvspec.AnnCloneType] == "" || pvc.Annotations[dvspec.AnnCloneType] == "copy" {
		t.Errorf("the DataVolume's claim: volume %q, data source %+v, annotations %v; want volume %s", pvc.Spec.VolumeName, pvc.Spec.DataSource, pvc.Annotations, pv.Name)
	}
	cl.waitPhase(ctx, t, key, phase)
	testenv.Eventually(ctx, t, "the volume's claimRef pointed at the DataVolume's claim", func() (bool, string) {
		if err := cl.c.Get(ctx, client.ObjectKeyFromObject(pv), pv); err != nil {
			return false, err.Error()
		}
		ref := pv.Spec.ClaimRef
		return ref != nil && ref.Namespace == key.Namespace && ref.Name == key.Name && ref.UID == pvc.UID, fmt.Sprintf("%+v", ref)
	})
	// The binder binds it.
	cl.bind(ctx, t, key)
	got = cl.waitPhase(ctx, t, key, cdiv1.Succeeded)
	testenv.Eventually(ctx, t, "nothing left in "+src, func() (bool, string) {
		// Deleted: without kube-controller-manager its pvc-protection
		// finalizer stays.
		tmp := &corev1.PersistentVolumeClaim{}
		err := cl.c.Get(ctx, tmpKey, tmp)
		deleted := apierrors.IsNotFound(err) || (err == nil && tmp.DeletionTimestamp != nil)
		got = cl.dv(ctx, t, key)
		return deleted && !controllerutil.ContainsFinalizer(got, CloneFinalizer), fmt.Sprintf("claim: %v %v, finalizers %v", err, tmp.DeletionTimestamp, got.Finalizers)
	})
	cl.noImporter(ctx, t, key)
}

// TestSmartCloneFirstConsumer: a CSI clone into a class that binds on
// first consumer is still the storage's, as CDI's: its claim names its
// source and waits, the DataVolume PendingPopulation until the scheduler
// picks the node of the pod that binds it, then in progress until it is
// bound, then Succeeded. No pod copies it.
func TestSmartCloneFirstConsumer(t *testing.T) {
	cl := startCluster(t)
	ctx := testenv.Within(t, 60*time.Second)
	ns := cl.namespace(t, "smartlate")
	cl.profile(ctx, t, "late", "csi.example.com", cdiv1.CloneStrategyCsiClone, "")
	sc := &storagev1.StorageClass{}
	if err := cl.c.Get(ctx, client.ObjectKey{Name: "late"}, sc); err != nil {
		t.Fatal(err)
	}
	// The binding mode cannot change: the class is made again.
	if err := cl.c.Delete(ctx, sc); err != nil {
		t.Fatal(err)
	}
	sc.ResourceVersion, sc.VolumeBindingMode = "", ptr.To(storagev1.VolumeBindingWaitForFirstConsumer)
	if err := cl.c.Create(ctx, sc); err != nil {
		t.Fatal(err)
	}
	cl.sourceClaim(ctx, t, ns, "golden", "late")
	dv := cloneDV(ns, "clone", "golden", "late")
	if err := cl.c.Create(ctx, dv); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(dv)
	cl.waitPhase(ctx, t, key, cdiv1.PendingPopulation)
	pvc := cl.waitClaim(ctx, t, key)
	if ds := pvc.Spec.DataSource; ds == nil || ds.Name != "golden" || pvc.Annotations[dvspec.AnnCloneType] != "csi-clone" {
		t.Errorf("claim data source %+v, annotations %v: want a CSI clone of golden", ds, pvc.Annotations)
	}
	// The scheduler picks a node for a workload's pod that uses it.
	pvc.Annotations[dvspec.AnnSelectedNode] = "node1"
	if err := cl.c.Update(ctx, pvc); err != nil {
		t.Fatal(err)
	}
	cl.waitPhase(ctx, t, key, cdiv1.CSICloneInProgress)
	cl.bind(ctx, t, key)
	cl.waitPhase(ctx, t, key, cdiv1.Succeeded)
	cl.noImporter(ctx, t, key)
}
