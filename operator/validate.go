package operator

import (
	"crypto/tls"
	"encoding/json"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/clusterconfig"
	"github.com/virtkit/virtkit/virt/migrate"
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
	errs = append(errs, validateRotation(kv, spec.Child("certificateRotateStrategy", "selfSigned"))...)
	errs = append(errs, validatePatches(kv.Spec.CustomizeComponents.Patches, spec.Child("customizeComponents", "patches"))...)
	conf := spec.Child("configuration")
	if r := kv.Spec.Configuration.AdditionalGuestMemoryOverheadRatio; r != nil {
		p := conf.Child("additionalGuestMemoryOverheadRatio")
		if v, err := strconv.ParseFloat(*r, 64); err != nil {
			errs = append(errs, field.Invalid(p, *r, "cannot be parsed into float"))
		} else if v < 1.0 {
			errs = append(errs, field.Invalid(p, *r, "cannot be smaller than 1.0"))
		}
	}
	errs = append(errs, migrate.ValidateClusterConfig(kv.Spec.Configuration.MigrationConfiguration)...)
	errs = append(errs, validateTLS(kv.Spec.Configuration.TLSConfiguration, conf.Child("tlsConfiguration"))...)
	return append(errs, validateSeccomp(kv.Spec.Configuration.SeccompConfiguration, conf.Child("seccompConfiguration"))...)
}

// validatePatches wants each customizeComponents patch to be JSON, as
// KubeVirt does.
func validatePatches(patches []virtv1.CustomizeComponentsPatch, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, patch := range patches {
		if !json.Valid([]byte(patch.Patch)) {
			errs = append(errs, field.Invalid(p.Index(i).Child("patch"), patch.Patch, "not valid JSON"))
		}
	}
	return errs
}

// validateTLS applies KubeVirt's rules to tlsConfiguration: ciphers only
// below TLS 1.3 (whose suites are fixed), and each a suite Go knows by its
// IANA name.
func validateTLS(c *virtv1.TLSConfiguration, p *field.Path) field.ErrorList {
	if c == nil || len(c.Ciphers) == 0 {
		return nil
	}
	if c.MinTLSVersion == "" || c.MinTLSVersion == virtv1.VersionTLS13 {
		return field.ErrorList{field.Forbidden(p.Child("ciphers"),
			"You cannot specify ciphers when spec.configuration.tlsConfiguration.minTLSVersion is empty or VersionTLS13")}
	}
	known := map[string]bool{}
	for _, cs := range append(tls.CipherSuites(), tls.InsecureCipherSuites()...) {
		known[cs.Name] = true
	}
	var errs field.ErrorList
	for i, c := range c.Ciphers {
		if !known[c] {
			errs = append(errs, field.NotSupported[string](p.Child("ciphers").Index(i), c, nil))
		}
	}
	return errs
}

// validateSeccomp wants a custom profile, and not both of its kinds.
func validateSeccomp(c *virtv1.SeccompConfiguration, p *field.Path) field.ErrorList {
	if c == nil || c.VirtualMachineInstanceProfile == nil {
		return nil
	}
	cp := p.Child("virtualMachineInstanceProfile", "customProfile")
	custom := c.VirtualMachineInstanceProfile.CustomProfile
	switch {
	case custom == nil:
		return field.ErrorList{field.Required(cp, "")}
	case custom.LocalhostProfile != nil && custom.RuntimeDefaultProfile:
		return field.ErrorList{field.Invalid(cp.Child("localhostProfile"), *custom.LocalhostProfile,
			"cannot be set when "+cp.Child("runtimeDefaultProfile").String()+" is set")}
	}
	return nil
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
	r := clusterconfig.RotationOf(kv)
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
