package fake

import (
	"context"
	"time"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/virt/domain"
)

var _ domain.Migrator = (*Manager)(nil)

// MigrationModel shapes how migrations out of the fake progress. A running
// migration advances to the Manager's clock (WithClock) each time JobStats
// is called, so a test that steps a fake clock between polls decides how
// much time passes; under a frozen clock nothing moves.
//
// The model, per advance over dt: the link sends LinkBytesPerSecond×dt
// (in pre-copy lowered to the migration's bandwidth limit); in pre-copy a
// running guest dirties DirtyBytesPerSecond×dt of memory already sent,
// minus the auto-converge throttle (20% at the first advance of a
// migration started with AutoConverge, 10 points more each advance, at
// most 99%), and a paused one nothing; once what remains fits in
// MaxDowntime at the current rate, the guest switches over with that
// downtime and the migration completes. In post-copy nothing is dirtied
// and the migration completes when everything was sent.
type MigrationModel struct {
	// LinkBytesPerSecond is what the modelled network carries. Zero means 1 GiB/s.
	LinkBytesPerSecond uint64
	// DirtyBytesPerSecond is how fast the guest changes memory during pre-copy.
	DirtyBytesPerSecond uint64
	// DiskBytes is what a migration with CopyStorage copies besides memory.
	DiskBytes uint64
	// MaxDowntime is the longest pause the switch-over may take (QEMU's
	// downtime limit). Zero means 300 ms, QEMU's default. A switch to
	// post-copy pauses the guest for a tenth of it.
	MaxDowntime time.Duration
	// LeaveTarget keeps the destination's incoming domain (paused) when a
	// migration fails or is aborted, as after a source daemon that died
	// mid-way; by default the destination cleans it up, as libvirt does.
	LeaveTarget bool
}

func (mm MigrationModel) withDefaults() MigrationModel {
	if mm.LinkBytesPerSecond == 0 {
		mm.LinkBytesPerSecond = 1 << 30
	}
	if mm.MaxDowntime == 0 {
		mm.MaxDowntime = 300 * time.Millisecond
	}
	return mm
}

// migrations is the migration state of one fake Manager, guarded by its mu.
type migrations struct {
	model     MigrationModel            // for domains without their own
	models    map[string]MigrationModel // domain -> model
	peers     map[string]*Manager       // destination URI -> peer
	jobs      map[string]*migrationJob  // domain -> running migration out
	completed map[string]domain.JobStats
}

// migLocked returns m's migration state, made on first use; m.mu must be held.
func (m *Manager) migLocked() *migrations {
	if m.mig == nil {
		m.mig = &migrations{
			models:    map[string]MigrationModel{},
			peers:     map[string]*Manager{},
			jobs:      map[string]*migrationJob{},
			completed: map[string]domain.JobStats{},
		}
	}
	return m.mig
}

// WithMigrationModel sets the MigrationModel of every domain that has none
// of its own (SetMigrationModel).
func WithMigrationModel(mm MigrationModel) Option {
	return func(m *Manager) { m.migLocked().model = mm }
}

// SetMigrationModel sets how migrations of one domain progress; it applies
// to migrations started afterwards.
func (m *Manager) SetMigrationModel(name string, mm MigrationModel) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.migLocked().models[name] = mm
}

// AddPeer makes peer the destination of migrations out of m to uri, as a
// libvirt daemon reaches another one by its URI.
func (m *Manager) AddPeer(uri string, peer *Manager) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.migLocked().peers[uri] = peer
}

// FailMigration makes the running migration of a domain fail at its next
// advance with message, as libvirt reports a broken stream or a crashed
// destination. A pre-copy migration leaves the domain running here; a
// post-copy one leaves it paused on both sides (reason postcopy-failed).
func (m *Manager) FailMigration(name, message string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	j, ok := m.migLocked().jobs[name]
	if !ok {
		return &domain.Error{Op: "fail-migration", Domain: name, Kind: domain.ErrInvalidState, Message: "no migration is running"}
	}
	j.fail = message
	return nil
}

// migrationJob is one running migration out of a fake Manager.
type migrationJob struct {
	params domain.MigrateParams
	peer   *Manager
	model  MigrationModel
	doc    *libvirtxml.Domain // the document the destination gets
	// destConfig is the destination's definition, made by incoming.
	destConfig *libvirtxml.Domain
	uuid       string

	started, last           time.Time
	total, memory, disk     uint64
	processed, remaining    uint64
	iteration, postcopyReqs uint64
	throttle                int
	rate, dirtyRate         uint64
	postCopy                bool
	downtime                time.Duration
	fail                    string
	done                    chan error // receives Migrate's result once
	cancelled, finishedOK   bool
}

// Migration lifecycle event details, numbered as libvirt's.
const (
	detailStartedMigrated  = 1 // VIR_DOMAIN_EVENT_STARTED_MIGRATED
	detailSuspendedPostcpy = 7 // VIR_DOMAIN_EVENT_SUSPENDED_POSTCOPY
	detailSuspendedPCFail  = 8 // VIR_DOMAIN_EVENT_SUSPENDED_POSTCOPY_FAILED
	detailResumedMigrated  = 1 // VIR_DOMAIN_EVENT_RESUMED_MIGRATED
	detailResumedPostcopy  = 3 // VIR_DOMAIN_EVENT_RESUMED_POSTCOPY
)

// MigratableXML returns a copy of the running document, or of a shut-off
// domain's definition, as libvirt does; see domain.Migrator.
func (m *Manager) MigratableXML(ctx context.Context, name string) (*libvirtxml.Domain, error) {
	var out *libvirtxml.Domain
	err := m.onDomain(ctx, domain.OpMigratableXML, name, func(d *fakeDomain) error {
		doc := d.live
		if doc == nil {
			doc = d.config
		}
		var err error
		out, err = copyDoc(doc)
		return err
	})
	return out, err
}

// Migrate moves a running domain to the peer added for p.DestinationURI
// (AddPeer), progressing as its MigrationModel says while JobStats is
// polled; see domain.Migrator.Migrate. The destination must not have a
// domain of that name at all (libvirt would accept an inactive definition
// of the same UUID; the fake does not model that).
func (m *Manager) Migrate(ctx context.Context, name string, p domain.MigrateParams) error {
	op := domain.OpMigrate
	fail := func(kind error, msg string) error {
		return &domain.Error{Op: op, Domain: name, Kind: kind, Message: msg}
	}
	switch {
	case p.DestinationURI == "":
		return fail(domain.ErrInvalidSpec, "MigrateParams.DestinationURI: required")
	case len(p.CopyDisks) > 0 && p.CopyStorage == domain.CopyNone:
		return fail(domain.ErrInvalidSpec, "MigrateParams.CopyDisks: given without CopyStorage")
	}
	// Check the source and find the peer.
	var j *migrationJob
	err := m.onDomain(ctx, op, name, func(d *fakeDomain) error {
		mig := m.migLocked()
		if d.live == nil {
			return invalidState(op, name, "domain is not running")
		}
		if _, busy := mig.jobs[name]; busy {
			return invalidState(op, name, "another migration job is already running for domain '"+name+"'")
		}
		peer, ok := mig.peers[p.DestinationURI]
		if !ok || peer == m {
			return fail(domain.ErrConnectionLost, "unable to connect to server at '"+p.DestinationURI+"': no such peer (fake.Manager.AddPeer)")
		}
		model, ok := mig.models[name]
		if !ok {
			model = mig.model
		}
		doc := d.live
		if p.DestinationXML != nil {
			doc = p.DestinationXML
		}
		cp, err := copyDoc(doc)
		if err != nil {
			return fail(domain.ErrInvalidSpec, "destination XML: "+err.Error())
		}
		if cp.Name != name {
			return fail(domain.ErrInvalidSpec, "unsupported configuration: target domain name '"+cp.Name+"' does not match source '"+name+"'")
		}
		now := m.now()
		j = &migrationJob{params: p, peer: peer, model: model.withDefaults(), doc: cp, uuid: d.uuid,
			started: now, last: now, done: make(chan error, 1)}
		if mem := d.live.Memory; mem != nil {
			j.memory = domain.MemoryBytes(mem.Value, mem.Unit)
		}
		if p.CopyStorage != domain.CopyNone {
			j.disk = j.model.DiskBytes
		}
		j.total = j.memory + j.disk
		j.remaining = j.total
		return nil
	})
	if err != nil {
		return err
	}
	// Prepare the incoming domain on the destination.
	if err := j.peer.incoming(name, j); err != nil {
		return err
	}
	// Register the job; the source may have changed meanwhile.
	if err := m.enter(ctx, op, name); err != nil {
		j.peer.dropIncoming(name)
		return err
	}
	d, lerr := m.lookupLocked(op, name)
	switch {
	case lerr != nil:
		err = lerr
	case d.live == nil:
		err = invalidState(op, name, "domain is not running")
	case m.migLocked().jobs[name] != nil:
		err = invalidState(op, name, "another migration job is already running for domain '"+name+"'")
	}
	if err != nil {
		m.mu.Unlock()
		j.peer.dropIncoming(name)
		return err
	}
	m.migLocked().jobs[name] = j
	m.mu.Unlock()

	select {
	case err := <-j.done:
		return err
	case <-ctx.Done():
		// The migration goes on, as libvirt's does after its caller gave up.
		return &domain.Error{Op: op, Domain: name, Err: ctx.Err()}
	}
}

// incoming makes the paused, transient domain a migration fills.
func (m *Manager) incoming(name string, j *migrationJob) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return &domain.Error{Op: domain.OpMigrate, Domain: name, Kind: domain.ErrConnectionLost, Message: "destination closed"}
	}
	if _, ok := m.domains[name]; ok {
		return &domain.Error{Op: domain.OpMigrate, Domain: name, Kind: domain.ErrAlreadyExists,
			Message: "operation failed: domain '" + name + "' already exists on the destination"}
	}
	live, err := copyDoc(j.doc)
	if err == nil {
		var cfg *libvirtxml.Domain
		cfg, err = copyDoc(j.doc)
		j.destConfig = cfg
	}
	if err != nil {
		return &domain.Error{Op: domain.OpMigrate, Domain: name, Kind: domain.ErrInvalidSpec, Message: err.Error(), Err: err}
	}
	id := 1
	live.ID = &id
	m.domains[name] = &fakeDomain{config: j.destConfig, live: live, uuid: j.uuid, state: domain.StatePaused,
		reason: domain.ReasonPausedMigration, started: m.now()}
	m.eventLocked(name, domain.EventStarted, detailStartedMigrated, "")
	return nil
}

// dropIncoming removes the incoming domain of a migration that did not
// happen, as libvirt's destination does.
func (m *Manager) dropIncoming(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if d, ok := m.domains[name]; ok && !d.persistent && d.live != nil {
		m.stopLocked(name, d, domain.ReasonShutoffFailed, domain.DetailStoppedFailed)
	}
}

// finishIncoming makes the migrated domain run on the destination.
func (m *Manager) finishIncoming(name string, j *migrationJob, stats domain.JobStats) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.domains[name]
	if !ok {
		return
	}
	d.state, d.reason = domain.StateRunning, domain.ReasonRunningMigrated
	if !j.postCopy {
		m.eventLocked(name, domain.EventResumed, detailResumedMigrated, "")
	}
	if j.params.Persistent && !d.persistent {
		d.persistent = true
		m.eventLocked(name, domain.EventDefined, domain.DetailDefinedAdded, "")
	}
	stats.Type = domain.JobCompleted
	m.migLocked().completed[name] = stats
}

// postCopyIncoming runs the destination's domain once post-copy began.
func (m *Manager) postCopyIncoming(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if d, ok := m.domains[name]; ok {
		d.state, d.reason = domain.StateRunning, domain.ReasonRunningPostcopy
		m.eventLocked(name, domain.EventResumed, detailResumedPostcopy, "")
	}
}

// failPostCopyIncoming pauses the destination's domain when post-copy failed.
func (m *Manager) failPostCopyIncoming(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if d, ok := m.domains[name]; ok {
		d.state, d.reason = domain.StatePaused, domain.ReasonPausedPostcopyFailed
		m.eventLocked(name, domain.EventSuspended, detailSuspendedPCFail, "")
	}
}

// JobStats advances a running migration to the clock's time and reports
// it; see domain.Migrator.JobStats.
func (m *Manager) JobStats(ctx context.Context, name string, opts domain.JobStatsOptions) (*domain.JobStats, error) {
	op := domain.OpJobStats
	if err := m.enter(ctx, op, name); err != nil {
		return nil, err
	}
	mig := m.migLocked()
	if opts.Completed {
		defer m.mu.Unlock()
		if _, err := m.lookupLocked(op, name); err != nil {
			return nil, err
		}
		st := mig.completed[name]
		return &st, nil
	}
	d, err := m.lookupLocked(op, name)
	j, ok := mig.jobs[name]
	if err != nil {
		if ok {
			// Destroyed and gone mid-migration: the migration fails.
			end := m.endLocked(name, nil, j, false, "operation failed: domain is not running")
			m.mu.Unlock()
			end()
		} else {
			m.mu.Unlock()
		}
		return nil, err
	}
	if !ok {
		m.mu.Unlock()
		if d.live == nil {
			return nil, invalidState(op, name, "domain is not running")
		}
		return &domain.JobStats{Type: domain.JobNone}, nil
	}
	end := m.advanceLocked(name, d, j)
	st := j.stats(m.now())
	m.mu.Unlock()
	if end != nil {
		// The job ended with this advance: like libvirt afterwards, report
		// none (the ending is Migrate's to report).
		end()
		return &domain.JobStats{Type: domain.JobNone}, nil
	}
	return &st, nil
}

// advanceLocked moves j forward to the clock's time. When the migration
// ends it changes the source (m.mu held) and returns what remains to do
// without the lock: the destination's side and Migrate's result.
func (m *Manager) advanceLocked(name string, d *fakeDomain, j *migrationJob) func() {
	now := m.now()
	dt := now.Sub(j.last)
	if d.live == nil {
		j.fail = "operation failed: domain is not running"
	}
	if j.fail != "" {
		return m.endLocked(name, d, j, false, j.fail)
	}
	if dt <= 0 {
		return nil
	}
	j.last = now
	rate := j.model.LinkBytesPerSecond
	// The limit applies to pre-copy only, as libvirt's does (post-copy has
	// its own, unlimited by default).
	if bw := j.params.BandwidthMiB << 20; bw > 0 && bw < rate && !j.postCopy {
		rate = bw
	}
	j.rate = rate
	sent := uint64(float64(rate) * dt.Seconds())
	if j.postCopy {
		sent = min(sent, j.remaining)
		j.processed += sent
		j.remaining -= sent
		j.postcopyReqs++
		if j.remaining == 0 {
			return m.endLocked(name, d, j, true, "")
		}
		return nil
	}
	j.iteration++
	if j.params.AutoConverge && j.model.DirtyBytesPerSecond > 0 {
		j.throttle = min(99, max(20, j.throttle+10))
	}
	j.dirtyRate = j.model.DirtyBytesPerSecond * uint64(100-j.throttle) / 100
	if d.state != domain.StateRunning {
		j.dirtyRate = 0 // a paused guest changes nothing
	}
	dirtied := uint64(float64(j.dirtyRate) * dt.Seconds())
	j.processed += min(sent, j.remaining)
	j.remaining -= min(sent, j.remaining)
	j.remaining = min(j.memory+j.disk, j.remaining+min(dirtied, j.memory))
	if float64(j.remaining) <= float64(rate)*j.model.MaxDowntime.Seconds() {
		j.downtime = time.Duration(float64(j.remaining) / float64(rate) * float64(time.Second))
		j.processed += j.remaining
		j.remaining = 0
		return m.endLocked(name, d, j, true, "")
	}
	return nil
}

// endLocked finishes j: on success the source domain stops (migrated) and
// disappears if asked to; on failure it keeps running (or, after post-copy,
// stays paused). d is nil when the domain is gone. m.mu must be held; the
// returned func runs without it.
func (m *Manager) endLocked(name string, d *fakeDomain, j *migrationJob, ok bool, msg string) func() {
	mig := m.migLocked()
	delete(mig.jobs, name)
	j.finishedOK = ok
	st := j.stats(m.now())
	peer := j.peer
	if ok {
		st.Type = domain.JobCompleted
		mig.completed[name] = st
		if d != nil && d.live != nil {
			m.stopLocked(name, d, domain.ReasonShutoffMigrated, domain.DetailStoppedMigrated)
		}
		if d != nil && j.params.UndefineSource && d.persistent {
			delete(m.domains, name)
			m.eventLocked(name, domain.EventUndefined, 0, "")
		}
		return func() {
			peer.finishIncoming(name, j, st)
			j.done <- nil
		}
	}
	st.Type, st.ErrorMessage = domain.JobFailed, msg
	if j.cancelled {
		st.Type = domain.JobCancelled
	}
	mig.completed[name] = st
	postCopy := j.postCopy
	if postCopy && d != nil && d.live != nil {
		d.state, d.reason = domain.StatePaused, domain.ReasonPausedPostcopyFailed
		m.eventLocked(name, domain.EventSuspended, detailSuspendedPCFail, "")
	}
	leave := j.model.LeaveTarget
	err := &domain.Error{Op: domain.OpMigrate, Domain: name, Message: msg}
	return func() {
		switch {
		case postCopy:
			peer.failPostCopyIncoming(name)
		case !leave:
			peer.dropIncoming(name)
		}
		j.done <- err
	}
}

// stats reports j as libvirt's job statistics would.
func (j *migrationJob) stats(now time.Time) domain.JobStats {
	st := domain.JobStats{
		Type:                 domain.JobUnbounded,
		Elapsed:              now.Sub(j.started),
		DataTotal:            j.total,
		DataProcessed:        j.processed,
		DataRemaining:        j.remaining,
		MemoryTotal:          j.memory,
		DiskTotal:            j.disk,
		MemoryBytesPerSecond: j.rate,
		DirtyBytesPerSecond:  j.dirtyRate,
		Iteration:            j.iteration,
		PostcopyRequests:     j.postcopyReqs,
		AutoConvergeThrottle: j.throttle,
		Downtime:             j.downtime,
	}
	// Disks are copied first, as libvirt's drive mirror runs before the
	// memory's pre-copy.
	st.DiskProcessed = min(j.processed, j.disk)
	st.DiskRemaining = j.disk - st.DiskProcessed
	st.MemoryProcessed = j.processed - st.DiskProcessed
	st.MemoryRemaining = j.remaining - min(j.remaining, st.DiskRemaining)
	if !j.finishedOK && !j.postCopy && j.rate > 0 {
		st.Downtime = time.Duration(float64(j.remaining) / float64(j.rate) * float64(time.Second))
	}
	return st
}

// SetMigrationBandwidth changes the running migration's limit; see
// domain.Migrator.SetMigrationBandwidth. Without a running migration it
// changes nothing (libvirt keeps it for the next one; the fake does not).
func (m *Manager) SetMigrationBandwidth(ctx context.Context, name string, mibPerSecond uint64) error {
	return m.onDomain(ctx, domain.OpSetMigrationBandwidth, name, func(d *fakeDomain) error {
		if d.live == nil {
			return invalidState(domain.OpSetMigrationBandwidth, name, "domain is not running")
		}
		if j, ok := m.migLocked().jobs[name]; ok {
			j.params.BandwidthMiB = mibPerSecond
		}
		return nil
	})
}

// StartPostCopy switches the running migration to post-copy: the guest
// pauses here (reason postcopy) and runs on the destination; see
// domain.Migrator.StartPostCopy.
func (m *Manager) StartPostCopy(ctx context.Context, name string) error {
	op := domain.OpStartPostCopy
	var peer *Manager
	err := m.onDomain(ctx, op, name, func(d *fakeDomain) error {
		j, ok := m.migLocked().jobs[name]
		switch {
		case !ok:
			return invalidState(op, name, "no migration is running")
		case !j.params.PostCopy:
			return invalidState(op, name, "switching to post-copy requires migration to be started with VIR_MIGRATE_POSTCOPY flag")
		case j.postCopy:
			return invalidState(op, name, "post-copy already started")
		}
		j.postCopy = true
		j.downtime = j.model.MaxDowntime / 10
		d.state, d.reason = domain.StatePaused, domain.ReasonPausedPostcopy
		m.eventLocked(name, domain.EventSuspended, detailSuspendedPostcpy, "")
		peer = j.peer
		return nil
	})
	if err != nil {
		return err
	}
	peer.postCopyIncoming(name)
	return nil
}

// AbortJob cancels a pre-copy migration: Migrate returns libvirt's
// "canceled by client" error and the domain keeps running here; see
// domain.Migrator.AbortJob.
func (m *Manager) AbortJob(ctx context.Context, name string) error {
	op := domain.OpAbortJob
	var end func()
	err := m.onDomain(ctx, op, name, func(d *fakeDomain) error {
		j, ok := m.migLocked().jobs[name]
		switch {
		case !ok:
			return invalidState(op, name, "no job is active on the domain")
		case j.postCopy:
			return invalidState(op, name, "cannot abort migration in post-copy mode")
		}
		j.cancelled = true
		end = m.endLocked(name, d, j, false, "operation aborted: job 'migration out' canceled by client")
		return nil
	})
	if err != nil {
		return err
	}
	end()
	return nil
}
