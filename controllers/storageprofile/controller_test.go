package storageprofile

import (
	"fmt"
	"testing"
	"time"

	volumesnapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/internal/testenv/kubeenv"
)

// TestProfiles: each StorageClass gets its StorageProfile, owned by it:
// virt-local's provisioner is recognized, with ReadWriteOnce Filesystem;
// an unknown one is not, with no property sets until its spec names some,
// which the status then carries.
func TestProfiles(t *testing.T) {
	env := kubeenv.ControlPlane(t)
	mgr := kubeenv.NewManager(t, env)
	if err := New().SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	kubeenv.RunManager(t, mgr)
	ctx := testenv.Within(t, time.Minute)
	c := env.Client
	for name, prov := range map[string]string{"local": LocalProvisioner, "odd": "example.com/odd"} {
		if err := c.Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: prov}); err != nil {
			t.Fatal(err)
		}
	}
	wait := func(name, what string, ok func(*cdiv1.StorageProfile) bool) *cdiv1.StorageProfile {
		t.Helper()
		sp := &cdiv1.StorageProfile{}
		testenv.Eventually(ctx, t, "StorageProfile "+name+" "+what, func() (bool, string) {
			if err := c.Get(ctx, client.ObjectKey{Name: name}, sp); err != nil {
				return false, err.Error()
			}
			return ok(sp), fmt.Sprintf("%+v", sp.Status)
		})
		return sp
	}
	recognized := func(sp *cdiv1.StorageProfile) corev1.ConditionStatus {
		for _, cond := range sp.Status.Conditions {
			if cond.Type == cdiv1.StorageProfileRecognized {
				return cond.Status
			}
		}
		return ""
	}
	local := wait("local", "recognized", func(sp *cdiv1.StorageProfile) bool { return recognized(sp) == corev1.ConditionTrue })
	if s := local.Status.ClaimPropertySets; len(s) != 2 || s[0].AccessModes[0] != corev1.ReadWriteMany || *s[0].VolumeMode != corev1.PersistentVolumeFilesystem ||
		*local.Status.Provisioner != LocalProvisioner || len(local.OwnerReferences) != 1 || local.OwnerReferences[0].Kind != "StorageClass" {
		t.Errorf("profile of virt-local's class: %+v, owners %+v", local.Status, local.OwnerReferences)
	}
	odd := wait("odd", "not recognized", func(sp *cdiv1.StorageProfile) bool { return recognized(sp) == corev1.ConditionFalse })
	if len(odd.Status.ClaimPropertySets) != 0 {
		t.Errorf("profile of an unknown provisioner: %+v", odd.Status.ClaimPropertySets)
	}
	block := corev1.PersistentVolumeBlock
	odd.Spec.ClaimPropertySets = []cdiv1.ClaimPropertySet{{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}, VolumeMode: &block}}
	if err := c.Update(ctx, odd); err != nil {
		t.Fatal(err)
	}
	wait("odd", "with the spec's property sets", func(sp *cdiv1.StorageProfile) bool {
		s := sp.Status.ClaimPropertySets
		return len(s) == 1 && s[0].AccessModes[0] == corev1.ReadWriteMany && *s[0].VolumeMode == block
	})

	// Clone strategies: virt-local's driver is advised csi-clone; the
	// unknown one copies until a VolumeSnapshotClass serves its driver.
	wait("local", "csi-clone", func(sp *cdiv1.StorageProfile) bool {
		return ptr.Deref(sp.Status.CloneStrategy, "") == cdiv1.CloneStrategyCsiClone && sp.Status.SnapshotClass == nil
	})
	wait("odd", "copy", func(sp *cdiv1.StorageProfile) bool {
		return ptr.Deref(sp.Status.CloneStrategy, "") == cdiv1.CloneStrategyHostAssisted
	})
	if err := c.Create(ctx, &volumesnapshotv1.VolumeSnapshotClass{ObjectMeta: metav1.ObjectMeta{Name: "odd-snaps"}, Driver: "example.com/odd",
		DeletionPolicy: volumesnapshotv1.VolumeSnapshotContentDelete}); err != nil {
		t.Fatal(err)
	}
	wait("odd", "snapshot, with its snapshot class", func(sp *cdiv1.StorageProfile) bool {
		return ptr.Deref(sp.Status.CloneStrategy, "") == cdiv1.CloneStrategySnapshot && ptr.Deref(sp.Status.SnapshotClass, "") == "odd-snaps"
	})
}
