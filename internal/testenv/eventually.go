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
	EventuallyEvery(ctx, t, 100*time.Millisecond, what, cond)
}

// EventuallyEvery is Eventually calling cond every interval, for a wait
// whose condition is cheap and whose test measures or races something
// shorter than 100 ms.
func EventuallyEvery(ctx context.Context, t testing.TB, interval time.Duration, what string, cond func() (ok bool, state string)) {
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
		case <-time.After(interval):
		}
	}
}

// Within returns a context that ends after d, for one Eventually, and
// cancels it when the test ends.
func Within(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// Consistently calls cond every interval until ctx ends, and fails the test
// naming what stopped holding, with cond's state, the first time cond
// reports false.
func Consistently(ctx context.Context, t testing.TB, interval time.Duration, what string, cond func() (ok bool, state string)) {
	t.Helper()
	for {
		if ok, state := cond(); !ok {
			t.Fatalf("%s stopped holding: %s", what, state)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}
