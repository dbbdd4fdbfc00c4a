package testenv

import (
	"context"
	"testing"
	"time"
)

// Eventually calls cond every 100 ms until it reports true, and fails the
// test naming what it waited for, with cond's last state, when ctx ends
// first.
func Eventually(ctx context.Context, t testing.TB, what string, cond func() (ok bool, state string)) {
	t.Helper()
	last := ""
	for {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s; last: %s", what, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
