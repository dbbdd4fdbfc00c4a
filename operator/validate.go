package operator

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	virtv1 "kubevirt.io/api/core/v1"
)

// minDuration is the shortest certificate life the operator issues: a
// certificate starts an hour early, for peers whose clocks lag.
const minDuration = time.Hour + time.Minute

// Validate reports what in kv's spec the operator cannot install, each
// error naming its field; the messages are KubeVirt's where KubeVirt has
// the same rule.
func Validate(kv *virtv1.KubeVirt) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if kv.Spec.Infra != nil && kv.Spec.Infra.Replicas != nil && *kv.Spec.Infra.Replicas == 0 {
		errs = append(errs, field.Invalid(spec.Child("infra", "replicas"), 0, "infra replica count can't be 0"))
	}
	switch kv.Spec.ImagePullPolicy {
	case "", corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	default:
		errs = append(errs, field.NotSupported(spec.Child("imagePullPolicy"), kv.Spec.ImagePullPolicy,
			[]corev1.PullPolicy{corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever}))
	}
	switch kv.Spec.UninstallStrategy {
	case "", virtv1.KubeVirtUninstallStrategyRemoveWorkloads, virtv1.KubeVirtUninstallStrategyBlockUninstallIfWorkloadsExist:
	default:
		errs = append(errs, field.NotSupported(spec.Child("uninstallStrategy"), kv.Spec.UninstallStrategy,
			[]virtv1.KubeVirtUninstallStrategy{virtv1.KubeVirtUninstallStrategyRemoveWorkloads, virtv1.KubeVirtUninstallStrategyBlockUninstallIfWorkloadsExist}))
	}
	return append(errs, validateRotation(kv, spec.Child("certificateRotateStrategy", "selfSigned"))...)
}

func validateRotation(kv *virtv1.KubeVirt, p *field.Path) field.ErrorList {
	ss := kv.Spec.CertificateRotationStrategy.SelfSigned
	if ss == nil {
		return nil
	}
	var errs field.ErrorList
	if (ss.CARotateInterval != nil || ss.CertRotateInterval != nil || ss.CAOverlapInterval != nil) && (ss.CA != nil || ss.Server != nil) {
		errs = append(errs, field.Forbidden(p, "caRotateInterval, certRotateInterval and caOverlapInterval are deprecated and conflict with CertConfig defined rotation parameters"))
	}
	r := RotationOf(kv)
	if r.CADuration < minDuration {
		errs = append(errs, field.Invalid(p.Child("ca", "duration"), r.CADuration.String(), "must be at least "+minDuration.String()))
	}
	if r.CertDuration < minDuration {
		errs = append(errs, field.Invalid(p.Child("server", "duration"), r.CertDuration.String(), "must be at least "+minDuration.String()))
	}
	if r.CARenewBefore > r.CADuration {
		errs = append(errs, field.Invalid(p.Child("ca", "renewBefore"), r.CARenewBefore.String(), "CA RenewBefore cannot exceed Duration"))
	}
	if r.CertRenewBefore > r.CertDuration {
		errs = append(errs, field.Invalid(p.Child("server", "renewBefore"), r.CertRenewBefore.String(), "Cert RenewBefore cannot exceed Duration"))
	}
	if r.CertDuration > r.CADuration {
		errs = append(errs, field.Invalid(p.Child("server", "duration"), r.CertDuration.String(), "Certificate duration cannot exceed CA"))
	}
	return errs
}
