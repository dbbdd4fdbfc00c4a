package datasource

import (
	"fmt"
	"testing"
	"time"

	volumesnapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/internal/testenv/kubeenv"
)

// TestReadiness: a DataSource is NotFound until its claim exists, NotReady
// while the claim is unbound or its DataVolume fills, Ready once it has
// Succeeded; a snapshot source is NotFound until the snapshot exists,
// NotReady until it is ready to use, then Ready; a DataSource naming
// another is NotSupported. Each change of the claim, the DataVolume or the
// snapshot wakes it.
func TestReadiness(t *testing.T) {
	env := kubeenv.ControlPlane(t)
	mgr := kubeenv.NewManager(t, env)
	if err := New().SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	kubeenv.RunManager(t, mgr)
	c := env.Client
	ctx := testenv.Within(t, time.Minute)
	const ns = "default"
	ds := &cdiv1.DataSource{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fedora"},
		Spec: cdiv1.DataSourceSpec{Source: cdiv1.DataSourceSource{PVC: &cdiv1.DataVolumeSourcePVC{Name: "fedora-41"}}}}
	must(t, c.Create(ctx, ds))
	ready := func(reason string) {
		t.Helper()
		wantSource := func(s cdiv1.DataSourceSource) bool { return s.PVC != nil }
		if ds.Spec.Source.Snapshot != nil {
			wantSource = func(s cdiv1.DataSourceSource) bool { return s.Snapshot != nil }
		}
		testenv.Eventually(ctx, t, "DataSource Ready reason "+reason, func() (bool, string) {
			got := &cdiv1.DataSource{}
			must(t, c.Get(ctx, client.ObjectKeyFromObject(ds), got))
			for _, cond := range got.Status.Conditions {
				if cond.Type == cdiv1.DataSourceReady {
					want := corev1.ConditionFalse
					if reason == ReasonReady {
						want = corev1.ConditionTrue
					}
					return cond.Reason == reason && cond.Status == want && wantSource(got.Status.Source), fmt.Sprintf("%+v", got.Status)
				}
			}
			return false, fmt.Sprintf("%+v", got.Status)
		})
	}
	ready(ReasonNotFound)

	dv := &cdiv1.DataVolume{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fedora-41"},
		Spec: cdiv1.DataVolumeSpec{Source: &cdiv1.DataVolumeSource{Blank: &cdiv1.DataVolumeBlankImage{}},
			Storage: &cdiv1.StorageSpec{Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}}
	must(t, c.Create(ctx, dv))
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fedora-41"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	must(t, c.Create(ctx, pvc))
	ready(ReasonNotReady)
	pvc.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}
	must(t, c.Status().Update(ctx, pvc))
	dv.Status.Phase = cdiv1.ImportInProgress
	must(t, c.Status().Update(ctx, dv))
	ready(ReasonNotReady)
	dv.Status.Phase = cdiv1.Succeeded
	must(t, c.Status().Update(ctx, dv))
	ready(ReasonReady)

	must(t, c.Get(ctx, client.ObjectKeyFromObject(ds), ds))
	ds.Spec.Source = cdiv1.DataSourceSource{Snapshot: &cdiv1.DataVolumeSourceSnapshot{Name: "snap"}}
	must(t, c.Update(ctx, ds))
	ready(ReasonNotFound)
	snap := &volumesnapshotv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "snap"},
		Spec: volumesnapshotv1.VolumeSnapshotSpec{Source: volumesnapshotv1.VolumeSnapshotSource{PersistentVolumeClaimName: &pvc.Name}}}
	must(t, c.Create(ctx, snap))
	ready(ReasonNotReady)
	snap.Status = &volumesnapshotv1.VolumeSnapshotStatus{ReadyToUse: ptr.To(true)}
	must(t, c.Status().Update(ctx, snap))
	ready(ReasonReady)

	must(t, c.Get(ctx, client.ObjectKeyFromObject(ds), ds))
	ds.Spec.Source = cdiv1.DataSourceSource{DataSource: &cdiv1.DataSourceRefSourceDataSource{Name: "other"}}
	must(t, c.Update(ctx, ds))
	testenv.Eventually(ctx, t, "NotSupported", func() (bool, string) {
		got := &cdiv1.DataSource{}
		must(t, c.Get(ctx, client.ObjectKeyFromObject(ds), got))
		for _, cond := range got.Status.Conditions {
			if cond.Type == cdiv1.DataSourceReady {
				return cond.Reason == ReasonNotSupported, cond.Message
			}
		}
		return false, "no Ready condition"
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
