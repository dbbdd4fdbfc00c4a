package csidriver

import (
	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Annotations that mark a cluster's default classes.
const (
	DefaultStorageClassAnnotation  = "storageclass.kubernetes.io/is-default-class"
	DefaultSnapshotClassAnnotation = "snapshot.storage.kubernetes.io/is-default-class"
)

// CSIDriver is the driver's registration with Kubernetes: no attach step
// (every node reaches every volume), no pod information on mount, volumes
// persistent only, and no ownership change by the kubelet (a volume's root
// is writable by all, as its folder is made).
func CSIDriver() *storagev1.CSIDriver {
	return &storagev1.CSIDriver{
		TypeMeta:   metav1.TypeMeta{APIVersion: "storage.k8s.io/v1", Kind: "CSIDriver"},
		ObjectMeta: metav1.ObjectMeta{Name: Name},
		Spec: storagev1.CSIDriverSpec{
			AttachRequired:       ptr.To(false),
			PodInfoOnMount:       ptr.To(false),
			VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent},
			FSGroupPolicy:        ptr.To(storagev1.NoneFSGroupPolicy),
			RequiresRepublish:    ptr.To(false),
			StorageCapacity:      ptr.To(false),
		},
	}
}

// StorageClass is a class of the driver's volumes: the cluster's default
// when isDefault, reclaim policy Delete, bound at once (every node reaches
// every volume, so there is no node to wait for), expandable.
func StorageClass(name string, isDefault bool) *storagev1.StorageClass {
	sc := &storagev1.StorageClass{
		TypeMeta:             metav1.TypeMeta{APIVersion: "storage.k8s.io/v1", Kind: "StorageClass"},
		ObjectMeta:           metav1.ObjectMeta{Name: name},
		Provisioner:          Name,
		ReclaimPolicy:        ptr.To(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode:    ptr.To(storagev1.VolumeBindingImmediate),
		AllowVolumeExpansion: ptr.To(true),
	}
	if isDefault {
		sc.Annotations = map[string]string{DefaultStorageClassAnnotation: "true"}
	}
	return sc
}

// VolumeSnapshotClass is a class of the driver's snapshots, the cluster's
// default when isDefault; deleting a VolumeSnapshot deletes its copy.
func VolumeSnapshotClass(name string, isDefault bool) *snapshotv1.VolumeSnapshotClass {
	c := &snapshotv1.VolumeSnapshotClass{
		TypeMeta:       metav1.TypeMeta{APIVersion: snapshotv1.SchemeGroupVersion.String(), Kind: "VolumeSnapshotClass"},
		ObjectMeta:     metav1.ObjectMeta{Name: name},
		Driver:         Name,
		DeletionPolicy: snapshotv1.VolumeSnapshotContentDelete,
	}
	if isDefault {
		c.Annotations = map[string]string{DefaultSnapshotClassAnnotation: "true"}
	}
	return c
}
