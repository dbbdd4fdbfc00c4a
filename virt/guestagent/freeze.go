package guestagent

import "context"

// FreezeStatus values of guest-fsfreeze-status, and KubeVirt's
// fsFreezeStatus.
const (
	Frozen = "frozen"
	Thawed = "thawed"
)

// Freeze freezes the guest's file systems (guest-fsfreeze-freeze) and
// returns how many it froze. The guest stays frozen until Thaw: the caller
// must thaw it, also on failure of what it froze for.
func Freeze(ctx context.Context, c Commander, domain string) (int, error) {
	var n int
	err := call(ctx, c, domain, "guest-fsfreeze-freeze", nil, &n)
	return n, err
}

// Thaw thaws the guest's file systems (guest-fsfreeze-thaw) and returns
// how many it thawed; a guest that is not frozen thaws none.
func Thaw(ctx context.Context, c Commander, domain string) (int, error) {
	var n int
	err := call(ctx, c, domain, "guest-fsfreeze-thaw", nil, &n)
	return n, err
}

// FreezeStatus is Frozen or Thawed (guest-fsfreeze-status).
func FreezeStatus(ctx context.Context, c Commander, domain string) (string, error) {
	var s string
	err := call(ctx, c, domain, "guest-fsfreeze-status", nil, &s)
	return s, err
}
