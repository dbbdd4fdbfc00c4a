package batch_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/virtkit/virtkit/controllers/batch"
)

func TestSlowStart(t *testing.T) {
	for _, c := range []struct {
		n, failAt  int
		wantDone   int
		wantCalled int32
	}{
		{n: 0, failAt: -1, wantDone: 0, wantCalled: 0},
		{n: 10, failAt: -1, wantDone: 10, wantCalled: 10},
		// Batches of 1, 2, 4: the failure at call 4 (in the third batch)
		// stops it there, 7 calls made and 6 succeeded.
		{n: 10, failAt: 4, wantDone: 6, wantCalled: 7},
		{n: 10, failAt: 0, wantDone: 0, wantCalled: 1},
	} {
		var called atomic.Int32
		done, err := batch.SlowStart(c.n, func(i int) error {
			called.Add(1)
			if i == c.failAt {
				return fmt.Errorf("call %d failed", i)
			}
			return nil
		})
		if done != c.wantDone || called.Load() != c.wantCalled || (err != nil) != (c.failAt >= 0) {
			t.Errorf("n=%d failAt=%d: done %d, called %d, err %v; want done %d, called %d", c.n, c.failAt, done, called.Load(), err, c.wantDone, c.wantCalled)
		}
	}
}
