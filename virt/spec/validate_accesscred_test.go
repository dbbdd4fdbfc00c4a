package spec

import (
	"testing"

	virtv1 "kubevirt.io/api/core/v1"
)

// Access credentials are checked as KubeVirt checks them.
func TestValidateAccessCredentials(t *testing.T) {
	secret := &virtv1.AccessCredentialSecretSource{SecretName: "keys"}
	agent := virtv1.SSHPublicKeyAccessCredentialPropagationMethod{QemuGuestAgent: &virtv1.QemuGuestAgentSSHPublicKeyAccessCredentialPropagation{Users: []string{"root"}}}
	ssh := func(src *virtv1.AccessCredentialSecretSource, m virtv1.SSHPublicKeyAccessCredentialPropagationMethod) virtv1.AccessCredential {
		return virtv1.AccessCredential{SSHPublicKey: &virtv1.SSHPublicKeyAccessCredential{Source: virtv1.SSHPublicKeyAccessCredentialSource{Secret: src}, PropagationMethod: m}}
	}
	password := virtv1.AccessCredential{UserPassword: &virtv1.UserPasswordAccessCredential{
		Source:            virtv1.UserPasswordAccessCredentialSource{Secret: secret},
		PropagationMethod: virtv1.UserPasswordAccessCredentialPropagationMethod{QemuGuestAgent: &virtv1.QemuGuestAgentUserPasswordAccessCredentialPropagation{}}}}
	const ac = "spec.accessCredentials"
	for _, tc := range []struct {
		name  string
		creds []virtv1.AccessCredential
		want  []errKey
	}{
		{"keys and a password through the agent", []virtv1.AccessCredential{ssh(secret, agent), password}, nil},
		{"neither kind", []virtv1.AccessCredential{{}}, []errKey{req(ac + "[0]")}},
		{"both kinds", []virtv1.AccessCredential{{SSHPublicKey: ssh(secret, agent).SSHPublicKey, UserPassword: password.UserPassword}}, []errKey{inv(ac + "[0]")}},
		{"no Secret", []virtv1.AccessCredential{ssh(nil, agent)}, []errKey{req(ac + "[0].sshPublicKey.source.secret.secretName")}},
		{"no method", []virtv1.AccessCredential{ssh(secret, virtv1.SSHPublicKeyAccessCredentialPropagationMethod{})}, []errKey{inv(ac + "[0].sshPublicKey.propagationMethod")}},
		{"the agent without users", []virtv1.AccessCredential{ssh(secret, virtv1.SSHPublicKeyAccessCredentialPropagationMethod{
			QemuGuestAgent: &virtv1.QemuGuestAgentSSHPublicKeyAccessCredentialPropagation{}})}, []errKey{req(ac + "[0].sshPublicKey.propagationMethod.qemuGuestAgent.users")}},
		{"configDrive without its volume", []virtv1.AccessCredential{ssh(secret, virtv1.SSHPublicKeyAccessCredentialPropagationMethod{
			ConfigDrive: &virtv1.ConfigDriveSSHPublicKeyAccessCredentialPropagation{}})}, []errKey{inv(ac + "[0].sshPublicKey.propagationMethod.configDrive")}},
		{"noCloud with its volume", []virtv1.AccessCredential{ssh(secret, virtv1.SSHPublicKeyAccessCredentialPropagationMethod{
			NoCloud: &virtv1.NoCloudSSHPublicKeyAccessCredentialPropagation{}})}, nil},
		{"a password without method", []virtv1.AccessCredential{{UserPassword: &virtv1.UserPasswordAccessCredential{
			Source: virtv1.UserPasswordAccessCredentialSource{Secret: secret}}}}, []errKey{req(ac + "[0].userPassword.propagationMethod.qemuGuestAgent")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vmi := validVMI()
			vmi.Spec.AccessCredentials = tc.creds
			assertErrs(t, ValidateVMI(vmi), tc.want...)
		})
	}
}
