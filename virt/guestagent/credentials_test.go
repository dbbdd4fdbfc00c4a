package guestagent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/virtkit/virtkit/virt/guestagent"
)

// recorder answers every command with an empty return and keeps them.
type recorder struct{ got []string }

func (r *recorder) GuestAgentCommand(_ context.Context, _, command string, _ time.Duration) (string, error) {
	r.got = append(r.got, command)
	if strings.Contains(command, "guest-ssh-get-authorized-keys") {
		return `{"return":{"keys":["ssh-ed25519 AAAA a@b"]}}`, nil
	}
	return `{"return":{}}`, nil
}

func TestCredentials(t *testing.T) {
	ctx := context.Background()
	r := &recorder{}
	if err := guestagent.SetAuthorizedKeys(ctx, r, "ns_vm", "root", []string{"ssh-ed25519 AAAA a@b"}); err != nil {
		t.Fatal(err)
	}
	if err := guestagent.SetAuthorizedKeys(ctx, r, "ns_vm", "root", nil); err != nil {
		t.Fatal(err)
	}
	if err := guestagent.SetUserPassword(ctx, r, "ns_vm", "admin", "s3cret"); err != nil {
		t.Fatal(err)
	}
	keys, err := guestagent.AuthorizedKeys(ctx, r, "ns_vm", "root")
	if err != nil || len(keys) != 1 || keys[0] != "ssh-ed25519 AAAA a@b" {
		t.Errorf("AuthorizedKeys = %q, %v", keys, err)
	}
	want := []string{
		`{"arguments":{"keys":["ssh-ed25519 AAAA a@b"],"reset":true,"username":"root"},"execute":"guest-ssh-add-authorized-keys"}`,
		`{"arguments":{"keys":[],"reset":true,"username":"root"},"execute":"guest-ssh-add-authorized-keys"}`,
		`{"arguments":{"crypted":false,"password":"czNjcmV0","username":"admin"},"execute":"guest-set-user-password"}`,
		`{"arguments":{"username":"root"},"execute":"guest-ssh-get-authorized-keys"}`,
	}
	if diff := cmp.Diff(want, r.got); diff != "" {
		t.Errorf("commands (-want +got):\n%s", diff)
	}
}
