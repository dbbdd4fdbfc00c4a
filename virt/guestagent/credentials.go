package guestagent

import (
	"context"
	"encoding/base64"
)

// SetAuthorizedKeys makes keys the whole of user's authorized SSH keys in
// the guest (guest-ssh-add-authorized-keys with reset, qemu-ga 5.2 and
// later), as KubeVirt's launcher sets them; no keys empties the file.
func SetAuthorizedKeys(ctx context.Context, c Commander, domain, user string, keys []string) error {
	if keys == nil {
		keys = []string{}
	}
	return call(ctx, c, domain, "guest-ssh-add-authorized-keys", map[string]any{"username": user, "keys": keys, "reset": true}, nil)
}

// AuthorizedKeys is user's authorized SSH keys in the guest
// (guest-ssh-get-authorized-keys), at most MaxItems of them.
func AuthorizedKeys(ctx context.Context, c Commander, domain, user string) ([]string, error) {
	var out struct {
		Keys []string `json:"keys"`
	}
	if err := call(ctx, c, domain, "guest-ssh-get-authorized-keys", map[string]any{"username": user}, &out); err != nil {
		return nil, err
	}
	return first(out.Keys), nil
}

// SetUserPassword sets user's password in the guest
// (guest-set-user-password, the password in clear and base64 on the wire,
// as libvirt's virDomainSetUserPassword sends it).
func SetUserPassword(ctx context.Context, c Commander, domain, user, password string) error {
	return call(ctx, c, domain, "guest-set-user-password", map[string]any{"username": user,
		"password": base64.StdEncoding.EncodeToString([]byte(password)), "crypted": false}, nil)
}
