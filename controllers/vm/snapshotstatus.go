package vm

import (
	"context"

	volumesnapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	k8sv1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/virt/storage/snapshot"
)

// volumeSnapshotStatuses are vm's status.volumeSnapshotStatuses as the
// cache shows its claims, their StorageClasses and the VolumeSnapshotClasses
// (snapshot.VolumeSnapshotStatuses). They ride on the VM's status write;
// when the cache cannot be read, the VM keeps the statuses it has.
func (r *Reconciler) volumeSnapshotStatuses(ctx context.Context, vm *virtv1.VirtualMachine) []virtv1.VolumeSnapshotStatus {
	if vm.Spec.Template == nil {
		return nil
	}
	f := snapshot.Facts{Claims: map[string]*k8sv1.PersistentVolumeClaim{}, StorageClasses: map[string]*storagev1.StorageClass{}}
	for _, v := range vm.Spec.Template.Spec.Volumes {
		name := snapshot.ClaimOf(v)
		if name == "" {
			continue
		}
		pvc := &k8sv1.PersistentVolumeClaim{}
		if err := r.client.Get(ctx, client.ObjectKey{Namespace: vm.Namespace, Name: name}, pvc); apierrors.IsNotFound(err) {
			continue
		} else if err != nil {
			return vm.Status.VolumeSnapshotStatuses
		}
		f.Claims[name] = pvc
		if c := pvc.Spec.StorageClassName; c != nil && f.StorageClasses[*c] == nil {
			sc := &storagev1.StorageClass{}
			if err := r.client.Get(ctx, client.ObjectKey{Name: *c}, sc); err == nil {
				f.StorageClasses[*c] = sc
			} else if !apierrors.IsNotFound(err) {
				return vm.Status.VolumeSnapshotStatuses
			}
		}
	}
	if len(f.StorageClasses) > 0 && r.snapshotClasses {
		var l volumesnapshotv1.VolumeSnapshotClassList
		if err := r.client.List(ctx, &l); err != nil {
			return vm.Status.VolumeSnapshotStatuses
		}
		f.SnapshotClasses = l.Items
	}
	return snapshot.VolumeSnapshotStatuses(vm, f)
}
