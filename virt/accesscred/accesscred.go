package accesscred

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/guestagent"
)

// SecretDir is where a launcher pod mounts Secrets, KubeVirt's
// /var/run/kubevirt-private/secret.
const SecretDir = "/var/run/kubevirt-private/secret"

// VolumeName is the launcher pod's volume of the credential Secret secret,
// as KubeVirt names it.
func VolumeName(secret string) string { return secret + "-access-cred" }

// Dir is where the launcher pod mounts the credential Secret secret.
func Dir(secret string) string { return path.Join(SecretDir, VolumeName(secret)) }

// Secret is the name of the Secret c takes its keys or passwords from, ""
// when it names none.
func Secret(c virtv1.AccessCredential) string {
	switch {
	case c.SSHPublicKey != nil && c.SSHPublicKey.Source.Secret != nil:
		return c.SSHPublicKey.Source.Secret.SecretName
	case c.UserPassword != nil && c.UserPassword.Source.Secret != nil:
		return c.UserPassword.Source.Secret.SecretName
	}
	return ""
}

// Secrets is the distinct Secrets of creds, in their order: the launcher
// pod mounts each once.
func Secrets(creds []virtv1.AccessCredential) []string {
	var out []string
	for _, c := range creds {
		if s := Secret(c); s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// ThroughAgent reports whether the guest agent propagates c.
func ThroughAgent(c virtv1.AccessCredential) bool {
	switch {
	case c.SSHPublicKey != nil:
		return c.SSHPublicKey.PropagationMethod.QemuGuestAgent != nil
	case c.UserPassword != nil:
		return c.UserPassword.PropagationMethod.QemuGuestAgent != nil
	}
	return false
}

// Wanted is what the agent is to set in the guest.
type Wanted struct {
	// Keys are each user's authorized SSH keys: all those of the Secrets
	// that name the user, in the credentials' order.
	Keys map[string][]string `json:"keys,omitempty"`
	// Passwords are users' passwords: each file of a password Secret is
	// a user, its content (trimmed) the password.
	Passwords map[string]string `json:"passwords,omitempty"`
}

// Empty reports whether w sets nothing.
func (w Wanted) Empty() bool { return len(w.Keys) == 0 && len(w.Passwords) == 0 }

// Digest identifies w's content, so that a caller sets the same again only
// when it must; it reveals nothing of the keys or passwords.
func (w Wanted) Digest() string {
	b, _ := json.Marshal(w) // maps marshal in key order
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// ReadFolder returns the files below the folder dir of the pod, by name
// relative to dir, leaving out Kubernetes' own ("..data" and the like).
type ReadFolder func(ctx context.Context, dir string) (map[string][]byte, error)

// Read reads what the credentials the agent propagates ask for from the
// pod's files. A Secret's folder that cannot be read fails, naming the
// credential's field and Secret.
func Read(ctx context.Context, creds []virtv1.AccessCredential, read ReadFolder) (Wanted, error) {
	w := Wanted{}
	for i, c := range creds {
		secret := Secret(c)
		if secret == "" || !ThroughAgent(c) {
			continue
		}
		files, err := read(ctx, Dir(secret))
		if err != nil {
			return Wanted{}, fmt.Errorf("spec.accessCredentials[%d]: Secret %s: %w", i, secret, err)
		}
		if c.SSHPublicKey != nil {
			keys := Keys(files)
			for _, u := range c.SSHPublicKey.PropagationMethod.QemuGuestAgent.Users {
				if w.Keys == nil {
					w.Keys = map[string][]string{}
				}
				w.Keys[u] = append(w.Keys[u], keys...)
			}
			continue
		}
		for _, n := range sortedKeys(files) {
			if p := strings.TrimSpace(string(files[n])); p != "" && !strings.Contains(n, "/") {
				if w.Passwords == nil {
					w.Passwords = map[string]string{}
				}
				w.Passwords[n] = p
			}
		}
	}
	return w, nil
}

// Keys are the SSH public keys a Secret's files hold (by name, as a pod
// sees them): every non-empty line, trimmed, files in name order.
func Keys(files map[string][]byte) []string {
	var keys []string
	for _, n := range sortedKeys(files) {
		for _, line := range strings.Split(string(files[n]), "\n") {
			if k := strings.TrimSpace(line); k != "" {
				keys = append(keys, k)
			}
		}
	}
	return keys
}

// CloudInitKeys are the SSH public keys creds propagate through cloud-init
// of one kind (configDrive, else noCloud), in the credentials' order, as
// KubeVirt writes them into the disk's meta-data. secrets are the Secrets'
// files by name; one missing fails, naming it.
func CloudInitKeys(creds []virtv1.AccessCredential, configDrive bool, secrets map[string]map[string][]byte) ([]string, error) {
	var keys []string
	for i, c := range creds {
		if c.SSHPublicKey == nil || c.SSHPublicKey.Source.Secret == nil {
			continue
		}
		m := c.SSHPublicKey.PropagationMethod
		if (configDrive && m.ConfigDrive == nil) || (!configDrive && m.NoCloud == nil) {
			continue
		}
		name := c.SSHPublicKey.Source.Secret.SecretName
		files, ok := secrets[name]
		if !ok {
			return nil, fmt.Errorf("spec.accessCredentials[%d]: Secret %s is not available in the pod", i, name)
		}
		keys = append(keys, Keys(files)...)
	}
	return keys, nil
}

// CloudInitSecrets are the Secrets of creds that cloud-init propagates
// (noCloud, configDrive): the handler reads them from the pod for the
// cloud-init disk.
func CloudInitSecrets(creds []virtv1.AccessCredential) []string {
	var out []string
	for _, c := range creds {
		if c.SSHPublicKey == nil || c.SSHPublicKey.Source.Secret == nil || ThroughAgent(c) {
			continue
		}
		if n := c.SSHPublicKey.Source.Secret.SecretName; !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// Apply sets w in the guest of domain through its agent: each user's
// authorized keys replaced by w's, then each password. It goes on past a
// user that fails and returns every failure, each naming its user, in
// KubeVirt's words.
func Apply(ctx context.Context, c guestagent.Commander, domain string, w Wanted) error {
	var errs []error
	for _, u := range sortedKeys(w.Keys) {
		if err := guestagent.SetAuthorizedKeys(ctx, c, domain, u, w.Keys[u]); err != nil {
			//lint:ignore ST1005 KubeVirt's message, which users match on
			errs = append(errs, fmt.Errorf("Error encountered writing ssh pub key access credentials for user [%s]: %w", u, err))
		}
	}
	for _, u := range sortedKeys(w.Passwords) {
		if err := guestagent.SetUserPassword(ctx, c, domain, u, w.Passwords[u]); err != nil {
			//lint:ignore ST1005 KubeVirt's message, which users match on
			errs = append(errs, fmt.Errorf("Error encountered setting password for user [%s]: %w", u, err))
		}
	}
	return errors.Join(errs...)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
