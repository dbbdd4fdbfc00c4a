package domaintest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/virtkit/virtkit/virt/domain"
)

// Migration event details the suite expects, numbered as libvirt's.
const (
	detailStartedMigrated   = 1 // VIR_DOMAIN_EVENT_STARTED_MIGRATED
	detailSuspendedPostcopy = 7 // VIR_DOMAIN_EVENT_SUSPENDED_POSTCOPY
	detailResumedPostcopy   = 3 // VIR_DOMAIN_EVENT_RESUMED_POSTCOPY
)

// migSuite is the state the migration steps share.
type migSuite struct {
	tg       MigrationTarget
	src, dst Host
	name     string // the domain the suite migrates
	// srcEvents and dstEvents record both sides' events for the whole run.
	srcEvents, dstEvents *recorder
}

// RunMigration runs the migration contract against the pair of hypervisors
// newTarget returns: refusals with the right sentinels, a migration's
// progress while it runs, an abort that leaves the guest running on the
// source and nothing on the destination, a switch to post-copy where the
// target declares it, and a migration that leaves the guest running on the
// destination and nothing on the source.
func RunMigration(t *testing.T, newTarget func(t *testing.T) MigrationTarget) {
	tg := newTarget(t)
	s := &migSuite{tg: tg, src: tg.Source, dst: tg.Destination, name: domainName(t)}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, m := range []Host{s.src, s.dst} {
			for _, n := range []string{s.name, s.postCopyName()} {
				_ = m.Destroy(ctx, n)
				_ = m.Undefine(ctx, n)
			}
			_ = m.Close()
		}
	})
	for _, st := range migrationSteps() {
		if !t.Run(st.name, func(t *testing.T) { st.run(s, t) }) {
			t.Fatalf("step %q failed; the later steps build on it", st.name)
		}
	}
}

type migStep struct {
	name string
	run  func(s *migSuite, t *testing.T)
}

func migrationSteps() []migStep {
	return []migStep{
		{"subscribe", (*migSuite).stepSubscribe},
		{"refusals-shut-off", (*migSuite).stepRefusalsShutOff},
		{"start", (*migSuite).stepStart},
		{"refusals-running", (*migSuite).stepRefusalsRunning},
		{"progress-abort", (*migSuite).stepProgressAbort},
		{"post-copy", (*migSuite).stepPostCopy},
		{"migrate", (*migSuite).stepMigrate},
		{"close", (*migSuite).stepClose},
	}
}

func (s *migSuite) postCopyName() string { return s.name + "-pc" }

func (s *migSuite) stepSubscribe(t *testing.T) {
	for _, side := range []struct {
		m   Host
		rec **recorder
	}{{s.src, &s.srcEvents}, {s.dst, &s.dstEvents}} {
		ch, err := side.m.Events(context.Background())
		if err != nil {
			t.Fatalf("Events: %v", err)
		}
		*side.rec = record(ch)
	}
}

// A shut-off domain cannot migrate, has no job and nothing to abort; bad
// parameters are the caller's fault.
func (s *migSuite) stepRefusalsShutOff(t *testing.T) {
	ctx, cancel := s.tg.ctx()
	defer cancel()
	if err := s.src.Define(ctx, s.tg.Domain(s.name)); err != nil {
		t.Fatalf("Define: %v", err)
	}
	p := s.tg.Params(t)
	missing := s.name + "-missing"
	wantErr(t, "Migrate without a destination", s.src.Migrate(ctx, s.name, domain.MigrateParams{}), domain.ErrInvalidSpec, s.name)
	bad := p
	bad.CopyDisks = []string{"vda"}
	wantErr(t, "Migrate with CopyDisks but no CopyStorage", s.src.Migrate(ctx, s.name, bad), domain.ErrInvalidSpec, s.name)
	wantErr(t, "Migrate of a missing domain", s.src.Migrate(ctx, missing, p), domain.ErrNotFound, missing)
	wantErr(t, "Migrate of a shut-off domain", s.src.Migrate(ctx, s.name, p), domain.ErrInvalidState, s.name)
	_, err := s.src.JobStats(ctx, missing, domain.JobStatsOptions{})
	wantErr(t, "JobStats of a missing domain", err, domain.ErrNotFound, missing)
	_, err = s.src.JobStats(ctx, s.name, domain.JobStatsOptions{})
	wantErr(t, "JobStats of a shut-off domain", err, domain.ErrInvalidState, s.name)
	wantErr(t, "AbortJob of a shut-off domain", s.src.AbortJob(ctx, s.name), domain.ErrInvalidState, s.name)
	wantErr(t, "StartPostCopy of a shut-off domain", s.src.StartPostCopy(ctx, s.name), domain.ErrInvalidState, s.name)
	_, err = s.src.MigratableXML(ctx, missing)
	wantErr(t, "MigratableXML of a missing domain", err, domain.ErrNotFound, missing)
	// A shut-off domain's migratable document is its definition.
	doc, err := s.src.MigratableXML(ctx, s.name)
	if err != nil {
		t.Errorf("MigratableXML of a shut-off domain: %v", err)
	} else if doc.Name != s.name {
		t.Errorf("MigratableXML of a shut-off domain: name %q, want %q", doc.Name, s.name)
	}
	s.expectNone(t, s.dst, s.name, "after the refusals")
}

func (s *migSuite) stepStart(t *testing.T) {
	s.boot(t, s.name)
}

// boot starts a defined domain on the source and waits for its guest.
func (s *migSuite) boot(t *testing.T, name string) {
	t.Helper()
	ctx, cancel := s.tg.ctx()
	defer cancel()
	if err := s.src.Start(ctx, name, domain.StartOptions{}); err != nil {
		t.Fatalf("Start %s: %v", name, err)
	}
	if s.tg.Booted != nil {
		s.tg.Booted(t, name)
	}
}

// A running domain without a migration has no job to abort or switch, and
// cannot migrate onto a destination that has a domain of its name.
func (s *migSuite) stepRefusalsRunning(t *testing.T) {
	ctx, cancel := s.tg.ctx()
	defer cancel()
	js, err := s.src.JobStats(ctx, s.name, domain.JobStatsOptions{})
	if err != nil || js.Type != domain.JobNone {
		t.Errorf("JobStats without a migration: %+v, %v; want type none", js, err)
	}
	wantErr(t, "AbortJob without a job", s.src.AbortJob(ctx, s.name), domain.ErrInvalidState, s.name)
	wantErr(t, "StartPostCopy without a migration", s.src.StartPostCopy(ctx, s.name), domain.ErrInvalidState, s.name)
	doc, err := s.src.MigratableXML(ctx, s.name)
	if err != nil {
		t.Fatalf("MigratableXML: %v", err)
	}
	if doc.Name != s.name {
		t.Errorf("MigratableXML: name %q, want %q", doc.Name, s.name)
	}

	// A definition of the same name (another guest: its own UUID) on the
	// destination is not replaced.
	if err := s.dst.Define(ctx, s.tg.Domain(s.name)); err != nil {
		t.Fatalf("Define on the destination: %v", err)
	}
	err = s.src.Migrate(ctx, s.name, s.params(t, s.name))
	wantErr(t, "Migrate onto a destination with that name", err, domain.ErrAlreadyExists, s.name)
	if err := s.dst.Undefine(ctx, s.name); err != nil {
		t.Fatalf("Undefine on the destination: %v", err)
	}
	expectRunning(t, s.src, s.name)
	s.expectNone(t, s.dst, s.name, "after a refused migration")
}

// A migration held to 1 MiB/s reports its progress while it runs, refuses
// post-copy it was not started with, and once aborted leaves the guest
// running on the source and nothing on the destination.
func (s *migSuite) stepProgressAbort(t *testing.T) {
	ctx, cancel := s.tg.ctx()
	defer cancel()
	p := s.params(t, s.name)
	p.BandwidthMiB = 1
	mig := s.migrate(t, s.name, p)

	first := mig.until(t, "memory moving", func(js *domain.JobStats) bool { return js.MemoryProcessed > 0 })
	if first.MemoryTotal == 0 || first.DataTotal < first.MemoryTotal || first.DataRemaining == 0 {
		t.Errorf("JobStats while memory moves at 1 MiB/s: %+v; want memory and data totals and data remaining", first)
	}
	if first.MemoryBytesPerSecond > 2<<20 {
		t.Errorf("JobStats: %d bytes/s, above the 1 MiB/s limit", first.MemoryBytesPerSecond)
	}
	later := mig.until(t, "more memory moved", func(js *domain.JobStats) bool {
		return js.DataProcessed > first.DataProcessed && js.Elapsed > first.Elapsed
	})
	t.Logf("progress: %d then %d of %d bytes after %s", first.DataProcessed, later.DataProcessed, later.DataTotal, later.Elapsed)

	st, _, err := s.dst.State(ctx, s.name)
	if err != nil || st != domain.StatePaused {
		t.Errorf("destination while the migration runs: %v, %v; want the incoming domain paused", st, err)
	}
	wantErr(t, "StartPostCopy of a migration without PostCopy", s.src.StartPostCopy(ctx, s.name), domain.ErrInvalidState, s.name)

	if err := s.src.AbortJob(ctx, s.name); err != nil {
		t.Fatalf("AbortJob: %v", err)
	}
	err = mig.wait(t)
	var de *domain.Error
	switch {
	case err == nil:
		t.Fatalf("Migrate after AbortJob succeeded")
	case !errors.As(err, &de) || de.Op != domain.OpMigrate || de.Domain != s.name:
		t.Errorf("Migrate after AbortJob: %v; want a *domain.Error of op %s naming %s", err, domain.OpMigrate, s.name)
	case de.Message == "":
		t.Errorf("Migrate after AbortJob: %v carries no message of the hypervisor's", err)
	}
	t.Logf("aborted: %v", err)
	expectRunning(t, s.src, s.name)
	js, err := s.src.JobStats(ctx, s.name, domain.JobStatsOptions{})
	if err != nil || js.Type != domain.JobNone {
		t.Errorf("JobStats after the abort: %+v, %v; want type none", js, err)
	}
	s.expectNone(t, s.dst, s.name, "after the abort")
}

// Post-copy: a migration started with PostCopy switches, the guest runs on
// the destination from then on, the migration cannot be aborted any more,
// and it completes. Without the capability, the switch is refused.
func (s *migSuite) stepPostCopy(t *testing.T) {
	ctx, cancel := s.tg.ctx()
	defer cancel()
	if !s.tg.Caps.PostCopy {
		p := s.params(t, s.name)
		p.BandwidthMiB, p.PostCopy = 1, true
		mig := s.migrate(t, s.name, p)
		mig.until(t, "memory moving", func(js *domain.JobStats) bool { return js.MemoryProcessed > 0 })
		wantErr(t, "StartPostCopy", s.src.StartPostCopy(ctx, s.name), domain.ErrUnsupported, s.name)
		if err := s.src.AbortJob(ctx, s.name); err != nil {
			t.Fatalf("AbortJob: %v", err)
		}
		if err := mig.wait(t); err == nil {
			t.Fatalf("Migrate after AbortJob succeeded")
		}
		s.expectNone(t, s.dst, s.name, "after the abort")
		return
	}
	name := s.postCopyName()
	if err := s.src.Define(ctx, s.tg.Domain(name)); err != nil {
		t.Fatalf("Define %s: %v", name, err)
	}
	s.boot(t, name)
	p := s.params(t, name)
	// The source keeps its definition, so that it exists (shut off) when
	// the migration completes at any point after the switch.
	p.BandwidthMiB, p.PostCopy, p.Persistent = 1, true, true
	mig := s.migrate(t, name, p)
	mig.until(t, "memory moving", func(js *domain.JobStats) bool { return js.MemoryProcessed > 0 })
	if err := s.src.StartPostCopy(ctx, name); err != nil {
		t.Fatalf("StartPostCopy: %v", err)
	}
	s.srcEvents.waitFor(t, s.tg.timeout(), func(e domain.Event) bool {
		return e.Domain == name && e.Type == domain.EventSuspended && e.Detail == detailSuspendedPostcopy
	}, "suspended/postcopy on the source")
	// Running in post-copy, or completed (then not running): either way
	// there is nothing to abort.
	wantErr(t, "AbortJob in post-copy", s.src.AbortJob(ctx, name), domain.ErrInvalidState, name)
	if err := mig.wait(t); err != nil {
		t.Fatalf("Migrate in post-copy: %v", err)
	}
	s.dstEvents.waitFor(t, s.tg.timeout(), func(e domain.Event) bool {
		return e.Domain == name && e.Type == domain.EventResumed && e.Detail == detailResumedPostcopy
	}, "resumed/postcopy on the destination")
	st, r, err := s.dst.State(ctx, name)
	if err != nil || st != domain.StateRunning || r != domain.ReasonRunningMigrated {
		t.Errorf("destination after post-copy: %v (%s), %v; want running (migrated)", st, domain.ReasonString(st, r), err)
	}
	st, r, err = s.src.State(ctx, name)
	if err != nil || st != domain.StateShutoff || r != domain.ReasonShutoffMigrated {
		t.Errorf("source after post-copy: %v (%s), %v; want shut off (migrated)", st, domain.ReasonString(st, r), err)
	}
	if err := s.dst.Destroy(ctx, name); err != nil {
		t.Errorf("Destroy on the destination: %v", err)
	}
	if err := s.dst.Undefine(ctx, name); err != nil {
		t.Errorf("Undefine on the destination: %v", err)
	}
	if err := s.src.Undefine(ctx, name); err != nil {
		t.Errorf("Undefine on the source: %v", err)
	}
}

// An unlimited migration, persistent on the destination and undefined on
// the source, leaves the guest running there and nothing here.
func (s *migSuite) stepMigrate(t *testing.T) {
	ctx, cancel := s.tg.ctx()
	defer cancel()
	p := s.params(t, s.name)
	p.Persistent, p.UndefineSource = true, true
	mig := s.migrate(t, s.name, p)
	if err := mig.wait(t); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	st, r, err := s.dst.State(ctx, s.name)
	if err != nil || st != domain.StateRunning || r != domain.ReasonRunningMigrated {
		t.Errorf("destination: %v (%s), %v; want running (migrated)", st, domain.ReasonString(st, r), err)
	}
	list, err := s.dst.List(ctx)
	if err != nil {
		t.Fatalf("List on the destination: %v", err)
	}
	if len(list) != 1 || list[0].Name != s.name || !list[0].Persistent {
		t.Errorf("destination's domains %+v; want %s alone, persistent", list, s.name)
	}
	done, err := s.dst.JobStats(ctx, s.name, domain.JobStatsOptions{Completed: true})
	if err != nil || done.Type != domain.JobCompleted || done.DataProcessed == 0 {
		t.Errorf("destination's completed job: %+v, %v; want a completed job that moved data", done, err)
	}
	_, _, err = s.src.State(ctx, s.name)
	wantErr(t, "State on the source after the migration", err, domain.ErrNotFound, s.name)
	s.expectNone(t, s.src, s.name, "on the source after the migration")
	s.srcEvents.waitFor(t, s.tg.timeout(), func(e domain.Event) bool {
		return e.Domain == s.name && e.Type == domain.EventStopped && e.Detail == domain.DetailStoppedMigrated
	}, "stopped/migrated on the source")
	s.dstEvents.waitFor(t, s.tg.timeout(), func(e domain.Event) bool {
		return e.Domain == s.name && e.Type == domain.EventStarted && e.Detail == detailStartedMigrated
	}, "started/migrated on the destination")
	if err := s.dst.Destroy(ctx, s.name); err != nil {
		t.Errorf("Destroy on the destination: %v", err)
	}
	if err := s.dst.Undefine(ctx, s.name); err != nil {
		t.Errorf("Undefine on the destination: %v", err)
	}
}

func (s *migSuite) stepClose(t *testing.T) {
	for _, m := range []Host{s.src, s.dst} {
		if err := m.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		ctx, cancel := s.tg.ctx()
		_, err := m.JobStats(ctx, s.name, domain.JobStatsOptions{})
		cancel()
		if !errors.Is(err, domain.ErrClosed) {
			t.Errorf("JobStats after Close: %v, want ErrClosed", err)
		}
	}
	s.srcEvents.waitClosed(t, s.tg.timeout())
	s.dstEvents.waitClosed(t, s.tg.timeout())
}

// params are the target's destination with the domain's migratable
// document, edited for the destination, as DestinationXML.
func (s *migSuite) params(t *testing.T, name string) domain.MigrateParams {
	t.Helper()
	ctx, cancel := s.tg.ctx()
	defer cancel()
	doc, err := s.src.MigratableXML(ctx, name)
	if err != nil {
		t.Fatalf("MigratableXML: %v", err)
	}
	if s.tg.EditDestination != nil {
		s.tg.EditDestination(doc)
	}
	p := s.tg.Params(t)
	p.DestinationXML = doc
	return p
}

// expectNone checks that m has no domain called name.
func (s *migSuite) expectNone(t *testing.T, m Host, name, when string) {
	t.Helper()
	ctx, cancel := s.tg.ctx()
	defer cancel()
	deadline := time.Now().Add(s.tg.timeout())
	for {
		list, err := m.List(ctx)
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		found := false
		for _, i := range list {
			found = found || i.Name == name
		}
		if !found {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is still there %s: %+v", name, when, list)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func expectRunning(t *testing.T, m Host, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, r, err := m.State(ctx, name)
	if err != nil || st != domain.StateRunning {
		t.Errorf("State of %s: %v (%s), %v; want running", name, st, domain.ReasonString(st, r), err)
	}
}
