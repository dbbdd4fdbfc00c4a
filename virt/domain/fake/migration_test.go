package fake_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/virtkit/virtkit/virt/domain"
	"github.com/virtkit/virtkit/virt/domain/fake"
)

const peerURI = "qemu+unix:///system?socket=/run/peer/libvirt-sock"

// clock is a settable clock for the fakes.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

// peers returns a source running "vm" (256 MiB) and its peer, on one clock.
func peers(t *testing.T, model fake.MigrationModel) (*fake.Manager, *fake.Manager, *clock) {
	t.Helper()
	clk := &clock{now: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	src := started(t, fake.WithClock(clk.Now), fake.WithMigrationModel(model))
	dst := fake.New(fake.WithClock(clk.Now))
	t.Cleanup(func() { dst.Close() })
	src.AddPeer(peerURI, dst)
	return src, dst, clk
}

// migrate starts Migrate and waits until the job runs.
func migrate(t *testing.T, src *fake.Manager, p domain.MigrateParams) <-chan error {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- src.Migrate(context.Background(), "vm", p) }()
	for {
		st, err := src.JobStats(context.Background(), "vm", domain.JobStatsOptions{})
		assert.NilError(t, err)
		if st.Type == domain.JobUnbounded {
			return errc
		}
		select {
		case err := <-errc:
			t.Fatalf("Migrate returned before its job ran: %v", err)
		case <-time.After(time.Millisecond):
		}
	}
}

func collect(t *testing.T, m *fake.Manager) func() []string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	events, err := m.Events(ctx)
	assert.NilError(t, err)
	var mu sync.Mutex
	var seen []string
	go func() {
		for e := range events {
			mu.Lock()
			seen = append(seen, e.String())
			mu.Unlock()
		}
	}()
	return func() []string {
		time.Sleep(20 * time.Millisecond) // let the queue drain
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

// A migration advances only when polled, by the clock's time: 256 MiB at
// 128 MiB/s is half done after a second and complete after two, with the
// domain running on the destination, its definition there, and nothing
// left on the source.
func TestMigrateProgressesWithTheClock(t *testing.T) {
	src, dst, clk := peers(t, fake.MigrationModel{LinkBytesPerSecond: 128 << 20})
	srcEvents, dstEvents := collect(t, src), collect(t, dst)
	errc := migrate(t, src, domain.MigrateParams{DestinationURI: peerURI, Persistent: true, UndefineSource: true})

	st, _, err := dst.State(context.Background(), "vm")
	assert.NilError(t, err)
	assert.Equal(t, st, domain.StatePaused, "the incoming domain waits, paused")

	clk.Add(time.Second)
	js, err := src.JobStats(context.Background(), "vm", domain.JobStatsOptions{})
	assert.NilError(t, err)
	assert.Equal(t, js.DataRemaining, uint64(128<<20))
	assert.Equal(t, js.MemoryProcessed, uint64(128<<20))
	assert.Equal(t, js.Elapsed, time.Second)

	clk.Add(time.Second)
	js, err = src.JobStats(context.Background(), "vm", domain.JobStatsOptions{})
	assert.NilError(t, err)
	assert.Equal(t, js.Type, domain.JobNone, "the poll that completes it sees no job any more")
	assert.NilError(t, <-errc)

	_, _, err = src.State(context.Background(), "vm")
	assert.Assert(t, errors.Is(err, domain.ErrNotFound), "undefined on the source: %v", err)
	s, r, err := dst.State(context.Background(), "vm")
	assert.NilError(t, err)
	assert.Equal(t, domain.ReasonString(s, r), "migrated")
	done, err := dst.JobStats(context.Background(), "vm", domain.JobStatsOptions{Completed: true})
	assert.NilError(t, err)
	assert.Equal(t, done.Type, domain.JobCompleted)
	assert.Equal(t, done.DataProcessed, uint64(256<<20))

	assert.DeepEqual(t, srcEvents(), []string{`domain "vm": stopped/3`, `domain "vm": undefined/0`})
	assert.DeepEqual(t, dstEvents(), []string{`domain "vm": started/1`, `domain "vm": resumed/1`, `domain "vm": defined/0`})
}

func TestMigrateRefusals(t *testing.T) {
	src, dst, _ := peers(t, fake.MigrationModel{})
	ctx := context.Background()
	err := src.Migrate(ctx, "vm", domain.MigrateParams{})
	assert.Assert(t, errors.Is(err, domain.ErrInvalidSpec), err)
	err = src.Migrate(ctx, "vm", domain.MigrateParams{DestinationURI: "qemu+tcp://elsewhere/system"})
	assert.Assert(t, errors.Is(err, domain.ErrConnectionLost), err)
	err = src.Migrate(ctx, "missing", domain.MigrateParams{DestinationURI: peerURI})
	assert.Assert(t, errors.Is(err, domain.ErrNotFound), err)

	assert.NilError(t, dst.Define(ctx, Document("vm")))
	err = src.Migrate(ctx, "vm", domain.MigrateParams{DestinationURI: peerURI})
	assert.Assert(t, errors.Is(err, domain.ErrAlreadyExists), err)
	assert.NilError(t, dst.Undefine(ctx, "vm"))

	err = src.StartPostCopy(ctx, "vm")
	assert.Assert(t, errors.Is(err, domain.ErrInvalidState), err)
	err = src.AbortJob(ctx, "vm")
	assert.Assert(t, errors.Is(err, domain.ErrInvalidState), err)
	assert.ErrorContains(t, err, "no job is active")

	assert.NilError(t, src.Destroy(ctx, "vm"))
	err = src.Migrate(ctx, "vm", domain.MigrateParams{DestinationURI: peerURI})
	assert.Assert(t, errors.Is(err, domain.ErrInvalidState), err)
	list, err := dst.List(ctx)
	assert.NilError(t, err)
	assert.Equal(t, len(list), 0, "no refusal left anything on the destination")
}

// An aborted migration returns libvirt's message, keeps the domain running
// on the source and removes the incoming one; the source keeps the
// cancelled job's statistics.
func TestMigrateAbort(t *testing.T) {
	src, dst, clk := peers(t, fake.MigrationModel{LinkBytesPerSecond: 1 << 20})
	errc := migrate(t, src, domain.MigrateParams{DestinationURI: peerURI, PostCopy: true})
	clk.Add(time.Second)
	assert.NilError(t, src.AbortJob(context.Background(), "vm"))
	err := <-errc
	assert.ErrorContains(t, err, "operation aborted: job 'migration out' canceled by client")
	st, _, err := src.State(context.Background(), "vm")
	assert.NilError(t, err)
	assert.Equal(t, st, domain.StateRunning)
	_, _, err = dst.State(context.Background(), "vm")
	assert.Assert(t, errors.Is(err, domain.ErrNotFound), err)
	js, err := src.JobStats(context.Background(), "vm", domain.JobStatsOptions{Completed: true})
	assert.NilError(t, err)
	assert.Equal(t, js.Type, domain.JobCancelled)
}

// Post-copy needs the flag, runs the guest on the destination at once,
// cannot be aborted, and is not bound by the pre-copy bandwidth limit.
func TestMigratePostCopy(t *testing.T) {
	src, dst, clk := peers(t, fake.MigrationModel{LinkBytesPerSecond: 128 << 20, DirtyBytesPerSecond: 1 << 30})
	ctx := context.Background()
	errc := migrate(t, src, domain.MigrateParams{DestinationURI: peerURI})
	assert.ErrorContains(t, src.StartPostCopy(ctx, "vm"), "requires migration to be started with VIR_MIGRATE_POSTCOPY")
	assert.NilError(t, src.AbortJob(ctx, "vm"))
	assert.Assert(t, <-errc != nil)

	errc = migrate(t, src, domain.MigrateParams{DestinationURI: peerURI, PostCopy: true, BandwidthMiB: 1})
	assert.NilError(t, src.StartPostCopy(ctx, "vm"))
	s, r, _ := src.State(ctx, "vm")
	assert.Equal(t, domain.ReasonString(s, r), "postcopy")
	s, r, _ = dst.State(ctx, "vm")
	assert.Equal(t, s.String()+"/"+domain.ReasonString(s, r), "running/postcopy")
	assert.ErrorContains(t, src.AbortJob(ctx, "vm"), "cannot abort migration in post-copy mode")
	clk.Add(2 * time.Second)
	_, err := src.JobStats(ctx, "vm", domain.JobStatsOptions{})
	assert.NilError(t, err)
	assert.NilError(t, <-errc)
}

// A caller that gives up gets its context's error; the migration goes on.
func TestMigrateOutlivesItsContext(t *testing.T) {
	src, dst, clk := peers(t, fake.MigrationModel{LinkBytesPerSecond: 1 << 30})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err := src.Migrate(ctx, "vm", domain.MigrateParams{DestinationURI: peerURI})
	assert.Assert(t, errors.Is(err, context.DeadlineExceeded), err)
	clk.Add(time.Second)
	js, err := src.JobStats(context.Background(), "vm", domain.JobStatsOptions{})
	assert.NilError(t, err)
	assert.Equal(t, js.Type, domain.JobNone)
	st, _, err := dst.State(context.Background(), "vm")
	assert.NilError(t, err)
	assert.Equal(t, st, domain.StateRunning)
}
