package clusterconfig_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/clusterconfig"
)

// d is h hours.
func d(h float64) *metav1.Duration {
	return &metav1.Duration{Duration: time.Duration(h * float64(time.Hour))}
}

func TestRotationOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		ss   *virtv1.KubeVirtSelfSignConfiguration
		want clusterconfig.Rotation
	}{
		{"KubeVirt's defaults", nil, clusterconfig.Rotation{CADuration: 168 * time.Hour, CARenewBefore: 168 * time.Hour / 5, CertDuration: 24 * time.Hour, CertRenewBefore: 24 * time.Hour / 5}},
		{"CertConfig", &virtv1.KubeVirtSelfSignConfiguration{CA: &virtv1.CertConfig{Duration: d(48), RenewBefore: d(10)}, Server: &virtv1.CertConfig{Duration: d(12)}},
			clusterconfig.Rotation{CADuration: 48 * time.Hour, CARenewBefore: 10 * time.Hour, CertDuration: 12 * time.Hour, CertRenewBefore: 12 * time.Hour / 5}},
		{"deprecated intervals", &virtv1.KubeVirtSelfSignConfiguration{CARotateInterval: d(72), CAOverlapInterval: d(24), CertRotateInterval: d(6)},
			clusterconfig.Rotation{CADuration: 72 * time.Hour, CARenewBefore: 24 * time.Hour, CertDuration: 6 * time.Hour, CertRenewBefore: 6 * time.Hour / 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kv := &virtv1.KubeVirt{Spec: virtv1.KubeVirtSpec{CertificateRotationStrategy: virtv1.KubeVirtCertificateRotateStrategy{SelfSigned: tc.ss}}}
			if diff := cmp.Diff(tc.want, clusterconfig.RotationOf(kv)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
