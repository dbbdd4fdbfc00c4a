package benchkit

import (
	"context"
	"fmt"
	"time"
)

// Wait polls cond every interval until it holds, fails, or ctx ends; the
// error names what it waited for.
func Wait(ctx context.Context, what string, every time.Duration, cond func() (bool, error)) error {
	for {
		ok, err := cond()
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", what, ctx.Err())
		case <-time.After(every):
		}
	}
}
