package vmi

import (
	"context"
	"testing"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/virtkit/virtkit/internal/scheme"
)

// BlockVolumes names the volumes whose claims are in Block mode: a claim
// or a DataVolume's claim, not a Filesystem or missing one, nor a
// hotpluggable volume (an attachment pod's).
func TestBlockVolumes(t *testing.T) {
	claim := func(name string, mode corev1.PersistentVolumeMode) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			Spec: corev1.PersistentVolumeClaimSpec{VolumeMode: &mode}}
	}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(
		claim("data-pvc", corev1.PersistentVolumeBlock), claim("dv1", corev1.PersistentVolumeBlock),
		claim("files", corev1.PersistentVolumeFilesystem), claim("hot", corev1.PersistentVolumeBlock)).Build()
	pvc := func(name, claim string, hot bool) virtv1.Volume {
		return virtv1.Volume{Name: name, VolumeSource: virtv1.VolumeSource{PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}, Hotpluggable: hot}}}
	}
	vmi := newVMI(withVolumes(), func(v *virtv1.VirtualMachineInstance) {
		v.Spec.Volumes = append(v.Spec.Volumes, pvc("files", "files", false), pvc("missing", "no-such-claim", false), pvc("hot", "hot", true))
	})
	got, err := BlockVolumes(context.Background(), c, vmi)
	assert.NilError(t, err)
	assert.DeepEqual(t, got, map[string]bool{"data": true, "dv": true})

	got, err = BlockVolumes(context.Background(), c, newVMI())
	assert.NilError(t, err)
	assert.Equal(t, len(got), 0)
}
