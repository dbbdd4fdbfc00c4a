package migrate_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	clocktesting "k8s.io/utils/clock/testing"
	virtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/virt/domain"
	"github.com/virtkit/virtkit/virt/domain/fake"
	"github.com/virtkit/virtkit/virt/migrate"
)

const (
	peerURI = "qemu+unix:///system?socket=/run/peer/libvirt-sock"
	vmName  = "vm"
	mib     = 1 << 20
	// poll is the poll interval, and the step of the fake clock per poll.
	poll = time.Second
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// pair is a source and a destination fake joined as peers, on one fake
// clock, with a running 256 MiB guest on the source.
type pair struct {
	clk      *clocktesting.FakeClock
	src, dst *fake.Manager
}

func newPair(t *testing.T, model fake.MigrationModel) *pair {
	t.Helper()
	clk := clocktesting.NewFakeClock(t0)
	p := &pair{
		clk: clk,
		src: fake.New(fake.WithClock(clk.Now), fake.WithMigrationModel(model)),
		dst: fake.New(fake.WithClock(clk.Now)),
	}
	t.Cleanup(func() { p.src.Close(); p.dst.Close() })
	p.src.AddPeer(peerURI, p.dst)
	ctx := context.Background()
	assert.NilError(t, p.src.Define(ctx, guest(vmName)))
	assert.NilError(t, p.src.Start(ctx, vmName, domain.StartOptions{}))
	return p
}

func guest(name string) *libvirtxml.Domain {
	return &libvirtxml.Domain{
		Type:   "qemu",
		Name:   name,
		Memory: &libvirtxml.DomainMemory{Value: 256, Unit: "MiB"},
		OS:     &libvirtxml.DomainOS{Type: &libvirtxml.DomainOSType{Arch: "x86_64", Machine: "q35", Type: "hvm"}},
	}
}

// outcome is what one Run returned, and what it reported on the way.
type outcome struct {
	res      migrate.Result
	err      error
	progress []migrate.Progress
}

// run runs migrate.Run on the pair with a poll every second of the fake
// clock. The clock moves only while Run waits for its next poll, one poll
// interval at a time, so each poll sees exactly one more second of the
// model; onProgress runs at each poll, on Run's goroutine.
func (p *pair) run(t *testing.T, ctx context.Context, dest migrate.Destination, cfg migrate.Config, onProgress func(migrate.Progress), opts ...migrate.Option) outcome {
	t.Helper()
	if dest.URI == "" {
		dest.URI = peerURI
	}
	var out outcome
	opts = append([]migrate.Option{
		migrate.WithClock(p.clk),
		migrate.WithPollInterval(poll),
		migrate.WithProgress(func(pr migrate.Progress) {
			out.progress = append(out.progress, pr)
			if onProgress != nil {
				onProgress(pr)
			}
		}),
	}, opts...)
	done := make(chan struct{})
	go func() {
		defer close(done)
		out.res, out.err = migrate.Run(ctx, p.src, vmName, dest, cfg, opts...)
	}()
	// Step only while Run waits for its next poll and the source still runs
	// the migration (the fake registered it, and it has not ended): so
	// every run sees the same timeline, each poll one more second of the
	// model, and the clock stands still while Run handles an end. Reading
	// the job's progress here does not advance it: the clock has not moved
	// since Run's own poll.
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case <-done:
			return out
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("Run did not return; fake clock at %s", p.clk.Now().Sub(t0))
		}
		if p.clk.HasWaiters() {
			st, err := p.src.JobStats(context.Background(), vmName, domain.JobStatsOptions{})
			if err == nil && st.Type.Active() {
				p.clk.Step(poll)
				continue
			}
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// config is a Config with KubeVirt's defaults and the given edits.
func config(edit func(*migrate.Config)) migrate.Config {
	c := migrate.DefaultConfig()
	if edit != nil {
		edit(&c)
	}
	return c
}

func state(t *testing.T, m *fake.Manager) string {
	t.Helper()
	s, r, err := m.State(context.Background(), vmName)
	if errors.Is(err, domain.ErrNotFound) {
		return "absent"
	}
	assert.NilError(t, err)
	return s.String() + "/" + domain.ReasonString(s, r)
}

// 256 MiB at 100 MiB/s while the guest dirties 10 MiB/s: 166 MiB left after
// a second, 76 after two, and at the third the last 10 MiB fit the downtime
// limit: done with 100 ms downtime.
func TestRunCompletes(t *testing.T) {
	p := newPair(t, fake.MigrationModel{LinkBytesPerSecond: 100 * mib, DirtyBytesPerSecond: 10 * mib})
	out := p.run(t, context.Background(), migrate.Destination{Host: p.dst}, config(nil), nil)
	assert.NilError(t, out.err)
	assert.Equal(t, out.res.Mode, virtv1.MigrationPreCopy)
	assert.Equal(t, out.res.Duration, 3*time.Second)
	assert.Equal(t, out.res.Downtime, 100*time.Millisecond)
	assert.Equal(t, out.res.DataTotal, uint64(256*mib))
	assert.Equal(t, out.res.DataProcessed, uint64(256*mib+30*mib), "memory, and the 3 × 10 MiB dirtied")
	assert.Equal(t, out.res.Iterations, uint64(3))
	assert.Equal(t, out.res.CompletionTimeout, 150*time.Second, "256 MiB counts as one GB")
	assert.Equal(t, out.res.Stats.Type, domain.JobCompleted, "the destination's completed statistics")
	assert.Equal(t, state(t, p.src), "absent", "the source is undefined")
	assert.Equal(t, state(t, p.dst), "running/migrated")
	list, err := p.dst.List(context.Background())
	assert.NilError(t, err)
	assert.Assert(t, list[0].Persistent, "persistent on the destination")

	assert.Equal(t, len(out.progress), 2, "two polls saw it running; the third completed it")
	assert.Equal(t, out.progress[0].Stats.DataRemaining, uint64(166*mib))
	assert.Equal(t, out.progress[1].Stats.DataRemaining, uint64(76*mib))
	assert.Equal(t, out.progress[1].Elapsed, 2*time.Second)
	assert.Equal(t, out.progress[1].Stats.DirtyBytesPerSecond, uint64(10*mib))
}

// Without the destination's Host, the downtime (known only there) is unknown.
func TestRunWithoutDestinationHostHasNoDowntime(t *testing.T) {
	p := newPair(t, fake.MigrationModel{LinkBytesPerSecond: 100 * mib, DirtyBytesPerSecond: 10 * mib})
	out := p.run(t, context.Background(), migrate.Destination{}, config(nil), nil)
	assert.NilError(t, out.err)
	assert.Equal(t, out.res.Downtime, time.Duration(0))
	assert.Equal(t, out.res.Stats.Type, domain.JobUnbounded, "the last poll's")
	assert.Equal(t, state(t, p.dst), "running/migrated")
}

// The guest dirties memory faster than the link sends it: the remaining
// data never shrinks, and after the progress timeout Run aborts. The guest
// keeps running on the source; the destination has nothing.
func TestRunAbortsWhenStalled(t *testing.T) {
	p := newPair(t, fake.MigrationModel{LinkBytesPerSecond: 100 * mib, DirtyBytesPerSecond: 150 * mib})
	cfg := config(func(c *migrate.Config) { c.ProgressTimeout = 5 * time.Second })
	out := p.run(t, context.Background(), migrate.Destination{Host: p.dst}, cfg, nil)
	assert.Assert(t, errors.Is(out.err, migrate.ErrStalled), out.err)
	var merr *migrate.Error
	assert.Assert(t, errors.As(out.err, &merr))
	assert.Equal(t, merr.Mode, virtv1.MigrationPreCopy)
	assert.ErrorContains(t, out.err, `migrate domain "vm": migration made no progress (PreCopy): no progress for 6s (progress timeout 5s)`)
	// The first poll (1 s) counts as progress; the stall is seen once more
	// than 5 s passed since: at the 7th.
	assert.Equal(t, len(out.progress), 7)
	assert.Equal(t, out.progress[6].SinceProgress, 6*time.Second)
	assert.Equal(t, out.res.Duration, 7*time.Second)
	assert.Equal(t, state(t, p.src), "running/booted")
	assert.Equal(t, state(t, p.dst), "absent")
}

// The same guest with auto-converge allowed: the throttle rises until the
// guest dirties less than the link sends, and the migration completes.
func TestRunAutoConvergeCompletesAStallingGuest(t *testing.T) {
	p := newPair(t, fake.MigrationModel{LinkBytesPerSecond: 100 * mib, DirtyBytesPerSecond: 150 * mib})
	cfg := config(func(c *migrate.Config) { c.ProgressTimeout, c.AllowAutoConverge = 5*time.Second, true })
	out := p.run(t, context.Background(), migrate.Destination{Host: p.dst}, cfg, nil)
	assert.NilError(t, out.err)
	throttles := []int{}
	for _, pr := range out.progress {
		throttles = append(throttles, pr.Stats.AutoConvergeThrottle)
	}
	assert.DeepEqual(t, throttles[:4], []int{20, 30, 40, 50})
	assert.Equal(t, state(t, p.dst), "running/migrated")
}

// A stalled migration with post-copy allowed switches to post-copy, which
// sends the rest without the guest dirtying it, and completes.
func TestRunSwitchesToPostCopyWhenStalled(t *testing.T) {
	p := newPair(t, fake.MigrationModel{LinkBytesPerSecond: 100 * mib, DirtyBytesPerSecond: 150 * mib})
	cfg := config(func(c *migrate.Config) {
		c.ProgressTimeout, c.AllowPostCopy, c.AllowWorkloadDisruption = 5*time.Second, true, true
	})
	out := p.run(t, context.Background(), migrate.Destination{Host: p.dst}, cfg, nil)
	assert.NilError(t, out.err)
	assert.Equal(t, out.res.Mode, virtv1.MigrationPostCopy)
	assert.Equal(t, out.progress[6].Mode, virtv1.MigrationPostCopy, "switched at the 7th poll")
	// 256 MiB left at the switch, 100 MiB/s: 156, 56, done at the 10th second.
	assert.Equal(t, out.res.Duration, 10*time.Second)
	assert.Equal(t, out.res.Downtime, 30*time.Millisecond, "the fake's post-copy switch: a tenth of the 300 ms limit")
	assert.Equal(t, state(t, p.src), "absent")
	assert.Equal(t, state(t, p.dst), "running/migrated")
}

// Post-copy needs workload disruption allowed too, as in KubeVirt: with
// allowWorkloadDisruption explicitly false the stalled migration aborts.
func TestRunPostCopyNeedsWorkloadDisruption(t *testing.T) {
	p := newPair(t, fake.MigrationModel{LinkBytesPerSecond: 100 * mib, DirtyBytesPerSecond: 150 * mib})
	cfg := config(func(c *migrate.Config) { c.ProgressTimeout, c.AllowPostCopy = 5*time.Second, true })
	out := p.run(t, context.Background(), migrate.Destination{Host: p.dst}, cfg, nil)
	assert.Assert(t, errors.Is(out.err, migrate.ErrStalled), out.err)
	assert.Equal(t, state(t, p.src), "running/booted")
}

// 10 MiB/s for 256 MiB is too slow for a 5 s completion timeout: aborted at
// the first poll past it.
func TestRunAbortsAtCompletionTimeout(t *testing.T) {
	p := newPair(t, fake.MigrationModel{LinkBytesPerSecond: 100 * mib})
	cfg := config(func(c *migrate.Config) {
		c.BandwidthPerMigration, c.CompletionTimeoutPerGiB = 10*mib, 5*time.Second
	})
	out := p.run(t, context.Background(), migrate.Destination{Host: p.dst}, cfg, nil)
	assert.Assert(t, errors.Is(out.err, migrate.ErrCompletionTimeout), out.err)
	assert.ErrorContains(t, out.err, "not completed after 6s (completion timeout 5s)")
	assert.Equal(t, out.res.CompletionTimeout, 5*time.Second)
	assert.Equal(t, out.progress[0].Stats.MemoryBytesPerSecond, uint64(10*mib), "the bandwidth limit reached the hypervisor")
	assert.Equal(t, out.res.DataProcessed, uint64(60*mib))
	assert.Equal(t, state(t, p.src), "running/booted")
	assert.Equal(t, state(t, p.dst), "absent")
	assert.Assert(t, !out.res.CleanedTarget, "the destination cleaned up itself")
}

// Past the completion timeout with post-copy allowed: post-copy, which is
// not bound by the pre-copy bandwidth limit.
func TestRunSwitchesToPostCopyAtCompletionTimeout(t *testing.T) {
	p := newPair(t, fake.MigrationModel{LinkBytesPerSecond: 100 * mib})
	cfg := config(func(c *migrate.Config) {
		c.BandwidthPerMigration, c.CompletionTimeoutPerGiB = 10*mib, 5*time.Second
		c.AllowPostCopy, c.AllowWorkloadDisruption = true, true
	})
	out := p.run(t, context.Background(), migrate.Destination{Host: p.dst}, cfg, nil)
	assert.NilError(t, out.err)
	assert.Equal(t, out.res.Mode, virtv1.MigrationPostCopy)
	// 196 MiB left at 6 s, then 100 MiB/s: done at 8 s.
	assert.Equal(t, out.res.Duration, 8*time.Second)
	assert.Equal(t, state(t, p.dst), "running/migrated")
}

// Past the completion timeout with workload disruption but no post-copy:
// the guest is paused (it stops dirtying memory) and the migration gets its
// time again; here that is enough.
func TestRunPausesTheGuestToComplete(t *testing.T) {
	p := newPair(t, fake.MigrationModel{LinkBytesPerSecond: 100 * mib, DirtyBytesPerSecond: 150 * mib})
	cfg := config(func(c *migrate.Config) {
		c.CompletionTimeoutPerGiB, c.ProgressTimeout, c.AllowWorkloadDisruption = 5*time.Second, 0, true
	})
	out := p.run(t, context.Background(), migrate.Destination{Host: p.dst}, cfg, nil)
	assert.NilError(t, out.err)
	assert.Equal(t, out.res.Mode, virtv1.MigrationPaused)
	assert.Equal(t, out.progress[5].Mode, virtv1.MigrationPaused, "paused at the 6th poll")
	assert.Equal(t, out.progress[5].CompletionTimeout, 10*time.Second, "given its time again")
	assert.Equal(t, out.res.Duration, 9*time.Second)
	assert.Equal(t, state(t, p.dst), "running/migrated")
}

// Pausing does not help when the link is too slow: the doubled timeout
// passes, Run aborts and resumes the guest it paused.
func TestRunResumesTheGuestItPausedWhenAborting(t *testing.T) {
	p := newPair(t, fake.MigrationModel{LinkBytesPerSecond: 100 * mib})
	cfg := config(func(c *migrate.Config) {
		c.BandwidthPerMigration, c.CompletionTimeoutPerGiB, c.AllowWorkloadDisruption = 10*mib, 5*time.Second, true
	})
	out := p.run(t, context.Background(), migrate.Destination{Host: p.dst}, cfg, nil)
	assert.Assert(t, errors.Is(out.err, migrate.ErrCompletionTimeout), out.err)
	assert.ErrorContains(t, out.err, "(Paused): not completed after 11s (completion timeout 10s)")
	assert.Equal(t, state(t, p.src), "running/unpaused")
	assert.Equal(t, state(t, p.dst), "absent")
}

// A guest the user had paused stays paused after an abort.
func TestRunLeavesAUserPausedGuestPaused(t *testing.T) {
	p := newPair(t, fake.MigrationModel{LinkBytesPerSecond: 100 * mib})
	assert.NilError(t, p.src.Pause(context.Background(), vmName))
	cfg := config(func(c *migrate.Config) {
		c.BandwidthPerMigration, c.CompletionTimeoutPerGiB, c.AllowWorkloadDisruption = 10*mib, 5*time.Second, true
	})
	out := p.run(t, context.Background(), migrate.Destination{Host: p.dst}, cfg, nil)
	assert.Assert(t, errors.Is(out.err, migrate.ErrCompletionTimeout), out.err)
	assert.Equal(t, state(t, p.src), "paused/user")
}

// Cancelling the context during pre-copy aborts; the error matches both
// ErrCancelled and the context's error.
func TestRunCancel(t *testing.T) {
	p := newPair(t, fake.MigrationModel{LinkBytesPerSecond: 10 * mib})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := p.run(t, ctx, migrate.Destination{Host: p.dst}, config(nil), func(pr migrate.Progress) {
		if pr.Elapsed == 2*time.Second {
			cancel()
		}
	})
	assert.Assert(t, errors.Is(out.err, migrate.ErrCancelled), out.err)
	assert.Assert(t, errors.Is(out.err, context.Canceled), out.err)
	assert.Equal(t, len(out.progress), 2)
	assert.Equal(t, state(t, p.src), "running/booted")
	assert.Equal(t, state(t, p.dst), "absent")
}

// A post-copy migration cannot be aborted: a cancel then waits for its end.
func TestRunCancelInPostCopyWaitsForTheEnd(t *testing.T) {
	p := newPair(t, fake.MigrationModel{LinkBytesPerSecond: 100 * mib, DirtyBytesPerSecond: 150 * mib})
	cfg := config(func(c *migrate.Config) {
		c.ProgressTimeout, c.AllowPostCopy, c.AllowWorkloadDisruption = 2*time.Second, true, true
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := p.run(t, ctx, migrate.Destination{Host: p.dst}, cfg, func(pr migrate.Progress) {
		if pr.Mode == virtv1.MigrationPostCopy {
			cancel()
		}
	})
	assert.NilError(t, out.err)
	assert.Equal(t, out.res.Mode, virtv1.MigrationPostCopy)
	assert.Equal(t, state(t, p.dst), "running/migrated")
}

// A failure the hypervisor reports carries its message; the guest keeps
// running on the source.
func TestRunReportsFailure(t *testing.T) {
	p := newPair(t, fake.MigrationModel{LinkBytesPerSecond: 10 * mib})
	out := p.run(t, context.Background(), migrate.Destination{Host: p.dst}, config(nil), func(pr migrate.Progress) {
		if pr.Elapsed == 2*time.Second {
			assert.Check(t, p.src.FailMigration(vmName, "operation failed: migration out job: unexpectedly failed"))
		}
	})
	assert.Assert(t, errors.Is(out.err, migrate.ErrFailed), out.err)
	var merr *migrate.Error
	assert.Assert(t, errors.As(out.err, &merr))
	assert.Equal(t, merr.Message, "operation failed: migration out job: unexpectedly failed")
	assert.Equal(t, state(t, p.src), "running/booted")
	assert.Equal(t, state(t, p.dst), "absent")
}

// A failure in post-copy loses the guest: Run reports it with the mode and
// touches neither side (the destination holds the guest's state).
func TestRunPostCopyFailureLeavesBothSides(t *testing.T) {
	p := newPair(t, fake.MigrationModel{LinkBytesPerSecond: 100 * mib, DirtyBytesPerSecond: 150 * mib})
	cfg := config(func(c *migrate.Config) {
		c.ProgressTimeout, c.AllowPostCopy, c.AllowWorkloadDisruption = 2*time.Second, true, true
	})
	out := p.run(t, context.Background(), migrate.Destination{Host: p.dst}, cfg, func(pr migrate.Progress) {
		if pr.Mode == virtv1.MigrationPostCopy {
			assert.Check(t, p.src.FailMigration(vmName, "operation failed: post-copy migration failed"))
		}
	})
	assert.Assert(t, errors.Is(out.err, migrate.ErrFailed), out.err)
	assert.ErrorContains(t, out.err, "(PostCopy): operation failed: post-copy migration failed")
	assert.Equal(t, out.res.Mode, virtv1.MigrationPostCopy)
	assert.Equal(t, state(t, p.src), "paused/postcopy-failed")
	assert.Equal(t, state(t, p.dst), "paused/postcopy-failed")
	assert.Assert(t, !out.res.CleanedTarget)
}

// When the destination keeps its incoming domain after an abort (as after
// a source daemon that died mid-way), Run removes it.
func TestRunCleansUpWhatTheDestinationKept(t *testing.T) {
	p := newPair(t, fake.MigrationModel{LinkBytesPerSecond: 100 * mib, LeaveTarget: true})
	cfg := config(func(c *migrate.Config) {
		c.BandwidthPerMigration, c.CompletionTimeoutPerGiB = 10*mib, 3*time.Second
	})
	out := p.run(t, context.Background(), migrate.Destination{Host: p.dst}, cfg, nil)
	assert.Assert(t, errors.Is(out.err, migrate.ErrCompletionTimeout), out.err)
	assert.Assert(t, out.res.CleanedTarget)
	assert.Equal(t, state(t, p.dst), "absent")
	assert.Equal(t, state(t, p.src), "running/booted")
}

// When switching to post-copy fails, Run falls back to aborting.
func TestRunAbortsWhenPostCopyIsRefused(t *testing.T) {
	p := newPair(t, fake.MigrationModel{LinkBytesPerSecond: 100 * mib, DirtyBytesPerSecond: 150 * mib})
	p.src.FailNext(domain.OpStartPostCopy, errors.New("internal error: unable to execute QEMU command 'migrate-start-postcopy'"))
	cfg := config(func(c *migrate.Config) {
		c.ProgressTimeout, c.AllowPostCopy, c.AllowWorkloadDisruption = 2*time.Second, true, true
	})
	out := p.run(t, context.Background(), migrate.Destination{Host: p.dst}, cfg, nil)
	assert.Assert(t, errors.Is(out.err, migrate.ErrStalled), out.err)
	assert.Equal(t, state(t, p.src), "running/booted")
}

// The progress callback may lift the bandwidth limit on the fly.
func TestRunBandwidthChangedOnTheFly(t *testing.T) {
	p := newPair(t, fake.MigrationModel{LinkBytesPerSecond: 100 * mib})
	cfg := config(func(c *migrate.Config) { c.BandwidthPerMigration = 1 * mib })
	out := p.run(t, context.Background(), migrate.Destination{Host: p.dst}, cfg, func(pr migrate.Progress) {
		if pr.Elapsed == time.Second {
			assert.Check(t, p.src.SetMigrationBandwidth(context.Background(), vmName, 0))
		}
	})
	assert.NilError(t, out.err)
	assert.Equal(t, out.progress[0].Stats.DataProcessed, uint64(1*mib))
	assert.Equal(t, out.res.Duration, 4*time.Second, "255 MiB at 100 MiB/s after the first second")
}

// The completion timeout follows the data size the caller gives (KubeVirt
// counts the VMI's memory), not the hypervisor's total.
func TestRunWithDataSize(t *testing.T) {
	p := newPair(t, fake.MigrationModel{LinkBytesPerSecond: 100 * mib})
	cfg := config(func(c *migrate.Config) { c.BandwidthPerMigration, c.CompletionTimeoutPerGiB = 10*mib, 2*time.Second })
	out := p.run(t, context.Background(), migrate.Destination{Host: p.dst}, cfg, nil, migrate.WithDataSize(3_000_000_000))
	assert.Assert(t, errors.Is(out.err, migrate.ErrCompletionTimeout), out.err)
	assert.Equal(t, out.res.CompletionTimeout, 6*time.Second)
	assert.Equal(t, out.res.Duration, 7*time.Second)
}

// EditXML changes the destination's document; WithParams has the last word
// on the parameters (here: keep the source's definition).
func TestRunDestinationDocumentAndParams(t *testing.T) {
	p := newPair(t, fake.MigrationModel{LinkBytesPerSecond: 1 << 30})
	dest := migrate.Destination{Host: p.dst, EditXML: func(doc *libvirtxml.Domain) error {
		doc.Description = "moved"
		return nil
	}}
	out := p.run(t, context.Background(), dest, config(nil), nil,
		migrate.WithParams(func(mp *domain.MigrateParams) { mp.UndefineSource = false }))
	assert.NilError(t, out.err)
	doc, err := p.dst.XML(context.Background(), vmName, domain.XMLOptions{})
	assert.NilError(t, err)
	assert.Equal(t, doc.Description, "moved")
	assert.Equal(t, state(t, p.src), "shutoff/migrated", "the source's definition was kept")
}

func TestRunFailsToStart(t *testing.T) {
	p := newPair(t, fake.MigrationModel{})
	out := p.run(t, context.Background(), migrate.Destination{URI: "qemu+tcp://nowhere/system", Host: p.dst}, config(nil), nil)
	assert.Assert(t, errors.Is(out.err, migrate.ErrFailed), out.err)
	assert.Assert(t, errors.Is(out.err, domain.ErrConnectionLost), out.err)
	assert.ErrorContains(t, out.err, "unable to connect to server at 'qemu+tcp://nowhere/system'")
	assert.Equal(t, state(t, p.src), "running/booted")

	editErr := errors.New("no such disk")
	out = p.run(t, context.Background(), migrate.Destination{EditXML: func(*libvirtxml.Domain) error { return editErr }}, config(nil), nil)
	assert.Assert(t, errors.Is(out.err, editErr), out.err)
	assert.ErrorContains(t, out.err, "Destination.EditXML: no such disk")

	assert.NilError(t, p.dst.Define(context.Background(), guest(vmName)))
	out = p.run(t, context.Background(), migrate.Destination{Host: p.dst}, config(nil), nil)
	assert.Assert(t, errors.Is(out.err, domain.ErrAlreadyExists), out.err)
	assert.Assert(t, !out.res.CleanedTarget, "a definition the destination had before is not Run's to remove")
	assert.Equal(t, state(t, p.dst), "shutoff/unknown")
}

func TestRunRejectsBadArguments(t *testing.T) {
	p := newPair(t, fake.MigrationModel{})
	ctx := context.Background()
	_, err := migrate.Run(ctx, p.src, vmName, migrate.Destination{}, config(nil))
	assert.ErrorContains(t, err, `migrate domain "vm": Destination.URI: required`)
	_, err = migrate.Run(ctx, p.src, "", migrate.Destination{URI: peerURI}, config(nil))
	assert.ErrorContains(t, err, "domain name: required")
	_, err = migrate.Run(ctx, nil, vmName, migrate.Destination{URI: peerURI}, config(nil))
	assert.ErrorContains(t, err, "no source Host")
}

// A hypervisor that refuses every abort: Run gives up once the abort wait
// has passed, saying so, rather than waiting for a migration that does not
// end; the source's guest is left as it runs.
func TestRunGivesUpWaitingForARefusedAbort(t *testing.T) {
	p := newPair(t, fake.MigrationModel{LinkBytesPerSecond: 100 * mib, DirtyBytesPerSecond: 150 * mib})
	refused := errors.New("operation not supported: hypervisor refuses")
	for range 20 {
		p.src.FailNext(domain.OpAbortJob, refused)
	}
	cfg := config(func(c *migrate.Config) { c.ProgressTimeout = 5 * time.Second })
	out := p.run(t, context.Background(), migrate.Destination{Host: p.dst}, cfg, nil, migrate.WithAbortWait(3*time.Second))
	assert.Assert(t, errors.Is(out.err, migrate.ErrStalled), out.err)
	assert.ErrorContains(t, out.err, "the migration did not end within 3s of aborting it")
	assert.Equal(t, state(t, p.src), "running/booted")
	// The migration still runs in the fake: end it, as the hypervisor
	// would eventually, so that Run's Migrate call returns.
	deadline := time.Now().Add(5 * time.Second)
	for p.src.AbortJob(context.Background(), vmName) != nil {
		if time.Now().After(deadline) {
			t.Fatal("the fake kept refusing the abort")
		}
	}
}
