package domaintest

import (
	"context"
	"testing"
	"time"

	"github.com/virtkit/virtkit/virt/domain"
)

// pollInterval is how often the suite reads a running migration's
// statistics, as a monitor (virt/migrate) does. The fake's migrations move
// only when polled.
const pollInterval = 50 * time.Millisecond

// migration is one Migrate call the suite runs in the background.
type migration struct {
	s    *migSuite
	name string
	done chan error
}

// migrate starts Migrate of name with p.
func (s *migSuite) migrate(t *testing.T, name string, p domain.MigrateParams) *migration {
	t.Helper()
	mig := &migration{s: s, name: name, done: make(chan error, 1)}
	go func() { mig.done <- s.src.Migrate(context.Background(), name, p) }()
	return mig
}

// until polls the migration's statistics until ok holds for a running job,
// and returns them. Migrate returning first fails the test.
func (mig *migration) until(t *testing.T, what string, ok func(*domain.JobStats) bool) *domain.JobStats {
	t.Helper()
	deadline := time.Now().Add(mig.s.tg.timeout())
	var last *domain.JobStats
	for {
		select {
		case err := <-mig.done:
			mig.done <- err // for wait
			t.Fatalf("Migrate of %s returned (%v) before %s; last statistics %+v", mig.name, err, what, last)
		default:
		}
		ctx, cancel := mig.s.tg.ctx()
		js, err := mig.s.src.JobStats(ctx, mig.name, domain.JobStatsOptions{})
		cancel()
		if err != nil {
			t.Fatalf("JobStats of %s while migrating: %v", mig.name, err)
		}
		if js.Type.Active() {
			last = js
			if ok(js) {
				return js
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("migration of %s: not %s after %s; last statistics %+v", mig.name, what, mig.s.tg.timeout(), last)
		}
		time.Sleep(pollInterval)
	}
}

// wait polls the migration's statistics until Migrate returns, and returns
// its result. A migration still running at the timeout is aborted and fails
// the test.
func (mig *migration) wait(t *testing.T) error {
	t.Helper()
	deadline := time.Now().Add(mig.s.tg.timeout())
	for {
		select {
		case err := <-mig.done:
			return err
		case <-time.After(pollInterval):
		}
		ctx, cancel := mig.s.tg.ctx()
		// Errors are expected here: the domain stops or disappears on the
		// source as the migration completes.
		_, _ = mig.s.src.JobStats(ctx, mig.name, domain.JobStatsOptions{})
		if time.Now().After(deadline) {
			_ = mig.s.src.AbortJob(ctx, mig.name)
			cancel()
			t.Fatalf("Migrate of %s still running after %s", mig.name, mig.s.tg.timeout())
		}
		cancel()
	}
}
