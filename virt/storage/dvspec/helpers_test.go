package dvspec

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
)

// httpDV is a DataVolume importing url into a 64 MiB disk.
func httpDV(ns, name, url string, change ...func(*cdiv1.DataVolume)) *cdiv1.DataVolume {
	dv := &cdiv1.DataVolume{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: "dv-uid"},
		Spec: cdiv1.DataVolumeSpec{
			Source: &cdiv1.DataVolumeSource{HTTP: &cdiv1.DataVolumeSourceHTTP{URL: url}},
			Storage: &cdiv1.StorageSpec{Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")}}},
		},
	}
	for _, f := range change {
		f(dv)
	}
	return dv
}

func resourceOf(s string) resource.Quantity { return resource.MustParse(s) }

func ptrTo[T any](v T) *T { return &v }
