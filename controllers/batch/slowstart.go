package batch

import (
	"errors"
	"sync"
)

// SlowStart calls fn(0) .. fn(n-1) in batches of 1, 2, 4... calls at once,
// as Kubernetes' replica sets create pods, and stops after the first batch
// in which a call failed: a controller that cannot create its objects (a
// quota, a refusing webhook) fails with one request rather than n. It
// returns how many calls succeeded and the errors of the failed batch.
func SlowStart(n int, fn func(i int) error) (int, error) {
	done := 0
	for size := 1; done < n; size *= 2 {
		batch := min(size, n-done)
		errs := make([]error, batch)
		var wg sync.WaitGroup
		for j := range batch {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[j] = fn(done + j)
			}()
		}
		wg.Wait()
		failed := 0
		for _, err := range errs {
			if err != nil {
				failed++
			}
		}
		done += batch - failed
		if failed > 0 {
			return done, errors.Join(errs...)
		}
	}
	return done, nil
}
