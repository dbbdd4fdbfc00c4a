package clusterconfig

import (
	"time"

	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/deploy/certs"
)

// Rotation is how long certificates last and how long before their end
// they are replaced.
type Rotation struct {
	CADuration, CARenewBefore     time.Duration
	CertDuration, CertRenewBefore time.Duration
}

// Defaults are KubeVirt's: a CA of 7 days and certificates of 1 day, each
// renewed when a fifth of its life is left.
const (
	defaultCADuration   = 7 * 24 * time.Hour
	defaultCertDuration = 24 * time.Hour
)

// RotationOf reads kv's spec.certificateRotateStrategy.selfSigned, with
// KubeVirt's defaults and its deprecated intervals taking precedence as
// in KubeVirt. The operator's validation checks the result; the operator
// issues the installation's certificates with it, and virt-controller the
// export servers'.
func RotationOf(kv *virtv1.KubeVirt) Rotation {
	r := Rotation{CADuration: defaultCADuration, CertDuration: defaultCertDuration}
	ss := kv.Spec.CertificateRotationStrategy.SelfSigned
	var caRenew, certRenew time.Duration
	if ss != nil {
		if ss.CA != nil {
			if ss.CA.Duration != nil {
				r.CADuration = ss.CA.Duration.Duration
			}
			if ss.CA.RenewBefore != nil {
				caRenew = ss.CA.RenewBefore.Duration
			}
		}
		if ss.Server != nil {
			if ss.Server.Duration != nil {
				r.CertDuration = ss.Server.Duration.Duration
			}
			if ss.Server.RenewBefore != nil {
				certRenew = ss.Server.RenewBefore.Duration
			}
		}
		if ss.CARotateInterval != nil {
			r.CADuration = ss.CARotateInterval.Duration
		}
		if ss.CAOverlapInterval != nil {
			caRenew = ss.CAOverlapInterval.Duration
		}
		if ss.CertRotateInterval != nil {
			r.CertDuration = ss.CertRotateInterval.Duration
		}
	}
	r.CARenewBefore, r.CertRenewBefore = caRenew, certRenew
	if r.CARenewBefore == 0 {
		r.CARenewBefore = certs.RenewBefore(r.CADuration)
	}
	if r.CertRenewBefore == 0 {
		r.CertRenewBefore = certs.RenewBefore(r.CertDuration)
	}
	return r
}
