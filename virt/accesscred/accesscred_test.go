package accesscred_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/accesscred"
)

func sshCred(secret string, users ...string) virtv1.AccessCredential {
	return virtv1.AccessCredential{SSHPublicKey: &virtv1.SSHPublicKeyAccessCredential{
		Source:            virtv1.SSHPublicKeyAccessCredentialSource{Secret: &virtv1.AccessCredentialSecretSource{SecretName: secret}},
		PropagationMethod: virtv1.SSHPublicKeyAccessCredentialPropagationMethod{QemuGuestAgent: &virtv1.QemuGuestAgentSSHPublicKeyAccessCredentialPropagation{Users: users}}}}
}

func passwordCred(secret string) virtv1.AccessCredential {
	return virtv1.AccessCredential{UserPassword: &virtv1.UserPasswordAccessCredential{
		Source:            virtv1.UserPasswordAccessCredentialSource{Secret: &virtv1.AccessCredentialSecretSource{SecretName: secret}},
		PropagationMethod: virtv1.UserPasswordAccessCredentialPropagationMethod{QemuGuestAgent: &virtv1.QemuGuestAgentUserPasswordAccessCredentialPropagation{}}}}
}

func folders(m map[string]map[string]string) accesscred.ReadFolder {
	return func(_ context.Context, dir string) (map[string][]byte, error) {
		files, ok := m[dir]
		if !ok {
			return nil, errors.New("no such folder")
		}
		out := map[string][]byte{}
		for k, v := range files {
			out[k] = []byte(v)
		}
		return out, nil
	}
}

func TestRead(t *testing.T) {
	noCloud := sshCred("cloud", "root")
	noCloud.SSHPublicKey.PropagationMethod = virtv1.SSHPublicKeyAccessCredentialPropagationMethod{NoCloud: &virtv1.NoCloudSSHPublicKeyAccessCredentialPropagation{}}
	creds := []virtv1.AccessCredential{sshCred("keys-a", "root", "admin"), sshCred("keys-b", "root"), passwordCred("pw"), noCloud}
	if d := cmp.Diff([]string{"keys-a", "keys-b", "pw", "cloud"}, accesscred.Secrets(append(creds, sshCred("keys-a", "x")))); d != "" {
		t.Errorf("Secrets (-want +got):\n%s", d)
	}
	read := folders(map[string]map[string]string{
		"/var/run/kubevirt-private/secret/keys-a-access-cred": {"k1": "ssh-ed25519 AAA1 one\n\n  ssh-rsa AAA2 two  \n", "k0": "ssh-ed25519 AAA0 zero"},
		"/var/run/kubevirt-private/secret/keys-b-access-cred": {"key": "ssh-ed25519 BBB b"},
		"/var/run/kubevirt-private/secret/pw-access-cred":     {"admin": "s3cret\n", "empty": "  ", "sub/dir": "x"},
	})
	got, err := accesscred.Read(context.Background(), creds, read)
	if err != nil {
		t.Fatal(err)
	}
	want := accesscred.Wanted{
		Keys: map[string][]string{
			"root":  {"ssh-ed25519 AAA0 zero", "ssh-ed25519 AAA1 one", "ssh-rsa AAA2 two", "ssh-ed25519 BBB b"},
			"admin": {"ssh-ed25519 AAA0 zero", "ssh-ed25519 AAA1 one", "ssh-rsa AAA2 two"},
		},
		Passwords: map[string]string{"admin": "s3cret"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Read (-want +got):\n%s", d)
	}
	if got.Digest() != want.Digest() || got.Digest() == (accesscred.Wanted{}).Digest() || strings.Contains(got.Digest(), "s3cret") {
		t.Errorf("Digest does not identify the content: %s", got.Digest())
	}

	_, err = accesscred.Read(context.Background(), []virtv1.AccessCredential{sshCred("missing", "root")}, read)
	if err == nil || !strings.Contains(err.Error(), "spec.accessCredentials[0]: Secret missing") {
		t.Errorf("a Secret not in the pod: %v, want the field and Secret named", err)
	}
}

// failing fails every command for user bob.
type failing struct{ got []string }

func (f *failing) GuestAgentCommand(_ context.Context, _, command string, _ time.Duration) (string, error) {
	f.got = append(f.got, command)
	if strings.Contains(command, `"bob"`) {
		return "", errors.New("no such user")
	}
	return `{"return":{}}`, nil
}

func TestApply(t *testing.T) {
	f := &failing{}
	err := accesscred.Apply(context.Background(), f, "ns_vm", accesscred.Wanted{
		Keys:      map[string][]string{"root": {"k1"}, "bob": {"k2"}},
		Passwords: map[string]string{"bob": "x", "admin": "y"},
	})
	if len(f.got) != 4 {
		t.Errorf("%d commands, want all 4 tried: %q", len(f.got), f.got)
	}
	for _, want := range []string{"ssh pub key access credentials for user [bob]", "setting password for user [bob]"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Apply: %v, want it to say %q", err, want)
		}
	}
	if err != nil && (strings.Contains(err.Error(), "[root]") || strings.Contains(err.Error(), "[admin]")) {
		t.Errorf("Apply blames users that succeeded: %v", err)
	}
}
