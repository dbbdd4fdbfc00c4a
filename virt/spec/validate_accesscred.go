package spec

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
	virtv1 "kubevirt.io/api/core/v1"
)

// validateAccessCredentials checks spec.accessCredentials as KubeVirt
// does: each names exactly one kind (an SSH public key or a user password),
// one Secret as its source and one propagation method; the agent's SSH
// propagation names at least one user; cloud-init propagation needs a
// volume of that kind.
func validateAccessCredentials(p *field.Path, s *virtv1.VirtualMachineInstanceSpec) field.ErrorList {
	var errs field.ErrorList
	var noCloud, configDrive bool
	for _, v := range s.Volumes {
		noCloud = noCloud || v.CloudInitNoCloud != nil
		configDrive = configDrive || v.CloudInitConfigDrive != nil
	}
	for i, c := range s.AccessCredentials {
		cp := p.Index(i)
		switch {
		case c.SSHPublicKey != nil && c.UserPassword != nil:
			errs = append(errs, field.Invalid(cp, "sshPublicKey, userPassword", "must have exactly one access credential type set"))
			continue
		case c.SSHPublicKey != nil:
			k, kp := c.SSHPublicKey, cp.Child("sshPublicKey")
			if k.Source.Secret == nil || k.Source.Secret.SecretName == "" {
				errs = append(errs, field.Required(kp.Child("source", "secret", "secretName"), "must have exactly one source set"))
			}
			m, mp := k.PropagationMethod, kp.Child("propagationMethod")
			if n := count(m.NoCloud != nil, m.ConfigDrive != nil, m.QemuGuestAgent != nil); n != 1 {
				errs = append(errs, field.Invalid(mp, fmt.Sprintf("%d methods", n), "must have exactly one propagationMethod set"))
			}
			if m.QemuGuestAgent != nil && len(m.QemuGuestAgent.Users) == 0 {
				errs = append(errs, field.Required(mp.Child("qemuGuestAgent", "users"), "requires at least one user to be present in the users list"))
			}
			if m.NoCloud != nil && !noCloud {
				errs = append(errs, field.Invalid(mp.Child("noCloud"), "{}", "requires a noCloud volume to exist when the noCloud propagationMethod is in use"))
			}
			if m.ConfigDrive != nil && !configDrive {
				errs = append(errs, field.Invalid(mp.Child("configDrive"), "{}", "requires a configDrive volume to exist when the configDrive propagationMethod is in use"))
			}
		case c.UserPassword != nil:
			up := cp.Child("userPassword")
			if c.UserPassword.Source.Secret == nil || c.UserPassword.Source.Secret.SecretName == "" {
				errs = append(errs, field.Required(up.Child("source", "secret", "secretName"), "must have exactly one source set"))
			}
			if c.UserPassword.PropagationMethod.QemuGuestAgent == nil {
				errs = append(errs, field.Required(up.Child("propagationMethod", "qemuGuestAgent"), "must have exactly one propagationMethod set"))
			}
		default:
			errs = append(errs, field.Required(cp, "must have exactly one access credential type set"))
		}
	}
	return errs
}

// count is how many of set are true.
func count(set ...bool) int {
	n := 0
	for _, s := range set {
		if s {
			n++
		}
	}
	return n
}
