package handler

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/accesscred"
	"github.com/virtkit/virtkit/virt/confined"
)

// keysAgent counts the keys it is told to set; broken fails them.
type keysAgent struct {
	sets   int
	broken bool
}

func (a *keysAgent) GuestAgentCommand(_ context.Context, _, command string, _ time.Duration) (string, error) {
	if strings.Contains(command, "guest-ssh-add-authorized-keys") {
		a.sets++
		if a.broken {
			return "", errors.New("no such user")
		}
	}
	return `{"return":{}}`, nil
}

// A VMI's SSH keys are set through the agent when they change and when
// the agent comes back, not at every poll; failures and an offline agent
// say why.
func TestSyncCredentials(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	dir := filepath.Join(root, accesscred.Dir("keys"))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	write := func(key string) {
		if err := os.WriteFile(filepath.Join(dir, "key"), []byte(key), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("ssh-ed25519 AAAA one")
	files, err := confined.Open(root, confined.NoSymlinks)
	if err != nil {
		t.Fatal(err)
	}
	defer files.Close()
	g := &guest{domain: "default_vm1", creds: []virtv1.AccessCredential{{SSHPublicKey: &virtv1.SSHPublicKeyAccessCredential{
		Source:            virtv1.SSHPublicKeyAccessCredentialSource{Secret: &virtv1.AccessCredentialSecretSource{SecretName: "keys"}},
		PropagationMethod: virtv1.SSHPublicKeyAccessCredentialPropagationMethod{QemuGuestAgent: &virtv1.QemuGuestAgentSSHPublicKeyAccessCredentialPropagation{Users: []string{"root"}}}}}}}
	a := &keysAgent{}
	poll := func(connected bool, prev *AgentFacts) *AgentFacts {
		f := &AgentFacts{Connected: connected}
		f.Credentials = syncCredentials(ctx, g, a, files, connected, prev)
		return f
	}

	f := poll(true, nil)
	if *f.Credentials != (CredentialsResult{Synced: true}) || a.sets != 1 {
		t.Fatalf("first poll: %+v after %d sets", f.Credentials, a.sets)
	}
	f = poll(true, f)
	if a.sets != 1 {
		t.Errorf("unchanged keys set again: %d sets", a.sets)
	}
	write("ssh-ed25519 AAAA two")
	f = poll(true, f)
	if a.sets != 2 || !f.Credentials.Synced {
		t.Errorf("changed keys: %+v after %d sets, want set again", f.Credentials, a.sets)
	}
	f = poll(false, f)
	if f.Credentials.Synced || f.Credentials.Message != "Guest agent is offline" {
		t.Errorf("agent gone: %+v", f.Credentials)
	}
	f = poll(true, f)
	if a.sets != 3 {
		t.Errorf("agent back: %d sets, want the keys set again", a.sets)
	}
	a.broken = true
	write("ssh-ed25519 AAAA three")
	f = poll(true, f)
	if f.Credentials.Synced || !strings.Contains(f.Credentials.Message, "for user [root]: ") {
		t.Errorf("refused by the guest: %+v", f.Credentials)
	}
	if g.creds = nil; syncCredentials(ctx, g, a, files, true, f) != nil {
		t.Error("a VMI without credentials has a result")
	}
}
