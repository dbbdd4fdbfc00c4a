package e2e

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	volumesnapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/internal/scheme"
)

// TestDataVolumeCloneAcrossNamespaces: a user who may edit namespace
// "copies" but not clone from "golden" is refused a DataVolume cloning a
// claim of "golden", with the permission named; given CDI's edit role in
// "golden", the clone is made by virt-local's driver (its StorageProfile
// says csi-clone) in "golden" and its volume handed over to the
// DataVolume's claim in "copies"; a VolumeSnapshot of the source is
// restored into "copies" the same way. A second clone, into a class whose
// profile says copy, is host-assisted: a source pod in "golden" sends the
// disk to the DataVolume's upload pod in "copies". Both disks are the
// source's, byte for byte. Deleting them leaves nothing in either
// namespace.
func TestDataVolumeCloneAcrossNamespaces(t *testing.T) {
	w := up(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	const golden, copies, user = "golden", "copies", "alice"
	for _, ns := range []string{golden, copies} {
		must(t, w.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	size := corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")}}
	must(t, w.c.Create(ctx, &cdiv1.DataVolume{ObjectMeta: metav1.ObjectMeta{Namespace: golden, Name: "base"},
		Spec: cdiv1.DataVolumeSpec{Storage: &cdiv1.StorageSpec{Resources: size},
			Source: &cdiv1.DataVolumeSource{Registry: &cdiv1.DataVolumeSourceRegistry{URL: ptrTo("docker://" + w.localImage("virtkit/test-guest:latest")),
				PullMethod: ptrTo(cdiv1.RegistryPullNode)}}}}))
	w.waitDV(ctx, t, client.ObjectKey{Namespace: golden, Name: "base"}, "Succeeded", func(dv *cdiv1.DataVolume) bool { return dv.Status.Phase == cdiv1.Succeeded })

	bind := func(ns, role string) {
		must(t, w.c.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: user + "-" + strings.ReplaceAll(role, ":", "-")},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: user}}}))
	}
	bind(copies, "edit")
	cfg, err := clientcmd.BuildConfigFromFlags("", w.kubeconfig)
	must(t, err)
	cfg = rest.CopyConfig(cfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	alice, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	must(t, err)
	clone := func() *cdiv1.DataVolume {
		return &cdiv1.DataVolume{ObjectMeta: metav1.ObjectMeta{Namespace: copies, Name: "copy"},
			Spec: cdiv1.DataVolumeSpec{Storage: &cdiv1.StorageSpec{Resources: size},
				Source: &cdiv1.DataVolumeSource{PVC: &cdiv1.DataVolumeSourcePVC{Namespace: golden, Name: "base"}}}}
	}
	// The edit role aggregates CDI's: alice may make DataVolumes in copies
	// once the aggregation has caught up, but not clone from golden.
	eventually(ctx, t, "alice's clone refused for the clone permission", func() (bool, string) {
		err := alice.Create(ctx, clone())
		return err != nil && strings.Contains(err.Error(), `may not clone claims of namespace "golden"`) &&
			strings.Contains(err.Error(), "spec.source.pvc.namespace") && strings.Contains(err.Error(), "datavolumes/source"), errString(err)
	})
	bind(golden, "cdi.kubevirt.io:edit")
	eventually(ctx, t, "alice's clone admitted", func() (bool, string) {
		err := alice.Create(ctx, clone())
		return err == nil, errString(err)
	})
	w.waitDV(ctx, t, client.ObjectKey{Namespace: copies, Name: "copy"}, "Succeeded", func(dv *cdiv1.DataVolume) bool { return dv.Status.Phase == cdiv1.Succeeded })
	w.checkSmartClone(ctx, t, client.ObjectKey{Namespace: copies, Name: "copy"}, "csi-clone", "")

	// Host-assisted, through a class whose profile says copy.
	copyClass := w.cloneClass(ctx, t, "local-copy", cdiv1.CloneStrategyHostAssisted)
	byPod := clone()
	byPod.Name, byPod.Spec.Storage.StorageClassName = "copy-by-pod", &copyClass
	must(t, w.c.Create(ctx, byPod))
	w.waitDV(ctx, t, client.ObjectKeyFromObject(byPod), "Succeeded", func(dv *cdiv1.DataVolume) bool { return dv.Status.Phase == cdiv1.Succeeded })
	pvc := &corev1.PersistentVolumeClaim{}
	must(t, w.c.Get(ctx, client.ObjectKeyFromObject(byPod), pvc))
	if pvc.Annotations["cdi.kubevirt.io/cloneType"] != "copy" {
		t.Errorf("the copied clone's claim annotations %v, want cloneType copy", pvc.Annotations)
	}

	// A VolumeSnapshot of golden restored into copies, the same way as
	// the CSI clone.
	snap := &volumesnapshotv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: golden, Name: "base-snap"},
		Spec: volumesnapshotv1.VolumeSnapshotSpec{Source: volumesnapshotv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptrTo("base")}}}
	must(t, w.c.Create(ctx, snap))
	fromSnap := &cdiv1.DataVolume{ObjectMeta: metav1.ObjectMeta{Namespace: copies, Name: "from-snapshot"},
		Spec: cdiv1.DataVolumeSpec{Storage: &cdiv1.StorageSpec{},
			Source: &cdiv1.DataVolumeSource{Snapshot: &cdiv1.DataVolumeSourceSnapshot{Namespace: golden, Name: snap.Name}}}}
	must(t, w.c.Create(ctx, fromSnap))
	w.waitDV(ctx, t, client.ObjectKeyFromObject(fromSnap), "Succeeded", func(dv *cdiv1.DataVolume) bool { return dv.Status.Phase == cdiv1.Succeeded })
	w.checkSmartClone(ctx, t, client.ObjectKeyFromObject(fromSnap), "snapshot", "")

	src := w.claimBytes(ctx, t, golden, "base")
	for _, n := range []string{"copy", "copy-by-pod", "from-snapshot"} {
		if dst := w.claimBytes(ctx, t, copies, n); len(src) == 0 || !bytes.Equal(src, dst) {
			t.Errorf("clone %s's disk (%d bytes) differs from its source's (%d bytes)", n, len(dst), len(src))
		}
	}

	must(t, w.c.Delete(ctx, &cdiv1.DataVolume{ObjectMeta: metav1.ObjectMeta{Namespace: copies, Name: "copy"}}))
	must(t, w.c.Delete(ctx, byPod))
	must(t, w.c.Delete(ctx, fromSnap))
	must(t, w.c.Delete(ctx, snap))
	must(t, w.c.Delete(ctx, &cdiv1.DataVolume{ObjectMeta: metav1.ObjectMeta{Namespace: golden, Name: "base"}}))
	w.waitNothingLeft(ctx, t, copies)
	w.waitNothingLeft(ctx, t, golden)
}

func errString(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}
