package provisioner

import (
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultClassAnnotation marks the cluster's default StorageClass.
const DefaultClassAnnotation = "storageclass.kubernetes.io/is-default-class"

// StorageClass is the class whose claims [Run] provisions: the cluster's
// default when isDefault, reclaim policy Delete, bound at once (every node
// reaches every folder, so there is no node to wait for).
func StorageClass(name string, isDefault bool) *storagev1.StorageClass {
	reclaim := corev1.PersistentVolumeReclaimDelete
	binding := storagev1.VolumeBindingImmediate
	sc := &storagev1.StorageClass{
		TypeMeta:          metav1.TypeMeta{APIVersion: "storage.k8s.io/v1", Kind: "StorageClass"},
		ObjectMeta:        metav1.ObjectMeta{Name: name},
		Provisioner:       Name,
		ReclaimPolicy:     &reclaim,
		VolumeBindingMode: &binding,
	}
	if isDefault {
		sc.Annotations = map[string]string{DefaultClassAnnotation: "true"}
	}
	return sc
}
