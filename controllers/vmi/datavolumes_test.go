package vmi

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"

	"github.com/virtkit/virtkit/internal/testenv"
)

func TestDataVolumeReady(t *testing.T) {
	for _, tc := range []struct {
		name  string
		dv    *cdiv1.DataVolume
		claim bool
		want  bool
	}{
		{"no DataVolume, no claim", nil, false, false},
		{"no DataVolume, a claim", nil, true, true},
		{"importing", &cdiv1.DataVolume{Status: cdiv1.DataVolumeStatus{Phase: cdiv1.ImportInProgress}}, true, false},
		{"failed", &cdiv1.DataVolume{Status: cdiv1.DataVolumeStatus{Phase: cdiv1.Failed}}, true, false},
		{"succeeded", &cdiv1.DataVolume{Status: cdiv1.DataVolumeStatus{Phase: cdiv1.Succeeded}}, true, true},
		{"waiting for its first consumer", &cdiv1.DataVolume{Status: cdiv1.DataVolumeStatus{Phase: cdiv1.WaitForFirstConsumer}}, false, true},
	} {
		if got := DataVolumeReady(tc.dv, tc.claim); got != tc.want {
			t.Errorf("%s: DataVolumeReady = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// testWaitsForDataVolume: a VMI with a dataVolume volume gets no launcher
// pod while its DataVolume fills, and gets one once it has Succeeded (the
// DataVolume's change wakes the VMI).
func testWaitsForDataVolume(t *testing.T, cl *cluster) {
	ctx := context.Background()
	ns := cl.namespace(t, "dvwait")
	dv := &cdiv1.DataVolume{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "disk"},
		Spec: cdiv1.DataVolumeSpec{Source: &cdiv1.DataVolumeSource{Blank: &cdiv1.DataVolumeBlankImage{}},
			Storage: &cdiv1.StorageSpec{Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}}
	if err := cl.c.Create(ctx, dv); err != nil {
		t.Fatal(err)
	}
	dv.Status.Phase = cdiv1.ImportInProgress
	if err := cl.c.Status().Update(ctx, dv); err != nil {
		t.Fatal(err)
	}
	cl.createVMI(t, ns, func(v *virtv1.VirtualMachineInstance) {
		v.Spec.Domain.Devices.Disks = append(v.Spec.Domain.Devices.Disks, virtv1.Disk{Name: "disk"})
		v.Spec.Volumes = append(v.Spec.Volumes, virtv1.Volume{Name: "disk", VolumeSource: virtv1.VolumeSource{
			DataVolume: &virtv1.DataVolumeSource{Name: "disk"}}})
	})
	testenv.Consistently(testenv.Within(t, 2*time.Second), t, 100*time.Millisecond, "no launcher pod while the DataVolume fills", func() (bool, string) {
		pods := cl.pods(t, ns)
		return len(pods) == 0, fmt.Sprintf("%d pods", len(pods))
	})
	dv.Status.Phase = cdiv1.Succeeded
	if err := cl.c.Status().Update(ctx, dv); err != nil {
		t.Fatal(err)
	}
	pod := cl.waitPod(t, ns)
	found := false
	for _, v := range pod.Spec.Volumes {
		found = found || (v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == "disk")
	}
	if !found {
		t.Errorf("launcher pod volumes %+v: no claim disk", pod.Spec.Volumes)
	}
}
