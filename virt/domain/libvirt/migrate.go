package libvirt

import (
	"context"
	"math"
	"time"

	"libvirt.org/go/libvirt"
	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/virt/domain"
)

var _ domain.Migrator = (*Manager)(nil)

// maxBandwidthMiB is the largest migration bandwidth libvirt's QEMU driver
// accepts (QEMU_DOMAIN_MIG_BANDWIDTH_MAX), which is also its "unlimited".
const maxBandwidthMiB = math.MaxInt64 / (1 << 20)

// MigratableXML returns the document to give a migration's destination;
// see domain.Migrator.MigratableXML.
func (m *Manager) MigratableXML(ctx context.Context, name string) (*libvirtxml.Domain, error) {
	var text string
	err := m.onDomain(ctx, domain.OpMigratableXML, name, func(d *libvirt.Domain) error {
		var err error
		text, err = d.GetXMLDesc(libvirt.DOMAIN_XML_MIGRATABLE)
		return err
	})
	if err != nil {
		return nil, err
	}
	doc := &libvirtxml.Domain{}
	if err := doc.Unmarshal(text); err != nil {
		return nil, &domain.Error{Op: domain.OpMigratableXML, Domain: name, Message: "parsing libvirt's document: " + err.Error(), Err: err}
	}
	return doc, nil
}

// Migrate runs a peer-to-peer live migration (virDomainMigrateToURI3 with
// VIR_MIGRATE_LIVE|VIR_MIGRATE_PEER2PEER): the daemon behind this Manager
// connects to p.DestinationURI itself, so the caller needs no connection to
// the destination; see domain.Migrator.Migrate.
//
// The migration runs on a connection of its own, opened for it and closed
// after it: libvirt's client stalls the other calls of a connection that
// has a call outstanding for a long time until its keepalive timer fires
// (5 s, measured with libvirt 9.0), which would blind the monitor polling
// JobStats and delay AbortJob.
func (m *Manager) Migrate(ctx context.Context, name string, p domain.MigrateParams) error {
	op := domain.OpMigrate
	params, flags, err := migrateArgs(name, p)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return &domain.Error{Op: op, Domain: name, Err: err}
	}
	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return &domain.Error{Op: op, Domain: name, Kind: domain.ErrClosed}
	}
	done := make(chan error, 1)
	go func() {
		lc, err := libvirt.NewConnect(m.uri)
		if err != nil {
			done <- &domain.Error{Op: op, Domain: name, Kind: domain.ErrConnectionLost,
				Message: "connecting to " + m.uri + " for the migration: " + message(err), Err: err}
			return
		}
		c := &conn{c: lc}
		defer func() { _, _ = lc.Close() }()
		d, err := lc.LookupDomainByName(name)
		if err == nil {
			err = d.MigrateToURI3(p.DestinationURI, params, flags)
			_ = d.Free()
		}
		done <- m.mapError(c, op, name, err)
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		// The migration goes on; AbortJob stops it.
		return &domain.Error{Op: op, Domain: name, Err: ctx.Err()}
	}
}

// migrateArgs turns MigrateParams into libvirt's typed parameters and flags.
func migrateArgs(name string, p domain.MigrateParams) (*libvirt.DomainMigrateParameters, libvirt.DomainMigrateFlags, error) {
	invalid := func(msg string) error {
		return &domain.Error{Op: domain.OpMigrate, Domain: name, Kind: domain.ErrInvalidSpec, Message: msg}
	}
	if p.DestinationURI == "" {
		return nil, 0, invalid("MigrateParams.DestinationURI: required")
	}
	flags := libvirt.MIGRATE_LIVE | libvirt.MIGRATE_PEER2PEER
	params := &libvirt.DomainMigrateParameters{}
	if p.MigrationURI != "" {
		params.URI, params.URISet = p.MigrationURI, true
	}
	if p.ListenAddress != "" {
		params.ListenAddress, params.ListenAddressSet = p.ListenAddress, true
	}
	if p.DisksURI != "" {
		params.DisksURI, params.DisksURISet = p.DisksURI, true
	}
	if p.DestinationXML != nil {
		xml, err := p.DestinationXML.Marshal()
		if err != nil {
			return nil, 0, invalid("MigrateParams.DestinationXML: " + err.Error())
		}
		params.DestXML, params.DestXMLSet = xml, true
		if p.Persistent {
			// Otherwise the destination's definition would be the source's,
			// with the source's paths.
			params.PersistXML, params.PersistXMLSet = xml, true
		}
	}
	if p.BandwidthMiB > 0 {
		params.Bandwidth, params.BandwidthSet = min(p.BandwidthMiB, maxBandwidthMiB), true
	}
	if p.AutoConverge {
		flags |= libvirt.MIGRATE_AUTO_CONVERGE
	}
	if p.PostCopy {
		flags |= libvirt.MIGRATE_POSTCOPY
	}
	switch p.CopyStorage {
	case domain.CopyNone:
	case domain.CopyIncremental:
		flags |= libvirt.MIGRATE_NON_SHARED_INC
	case domain.CopyFull:
		flags |= libvirt.MIGRATE_NON_SHARED_DISK
	default:
		return nil, 0, invalid("MigrateParams.CopyStorage: unknown mode " + p.CopyStorage.String())
	}
	if len(p.CopyDisks) > 0 {
		if p.CopyStorage == domain.CopyNone {
			return nil, 0, invalid("MigrateParams.CopyDisks: given without CopyStorage")
		}
		params.MigrateDisks, params.MigrateDisksSet = p.CopyDisks, true
	}
	if p.Persistent {
		flags |= libvirt.MIGRATE_PERSIST_DEST
	}
	if p.UndefineSource {
		flags |= libvirt.MIGRATE_UNDEFINE_SOURCE
	}
	if p.Unsafe {
		flags |= libvirt.MIGRATE_UNSAFE
	}
	if p.ParallelConnections > 1 {
		flags |= libvirt.MIGRATE_PARALLEL
		params.ParallelConnections, params.ParallelConnectionsSet = p.ParallelConnections, true
	}
	return params, flags, nil
}

// JobStats reads virDomainGetJobStats; see domain.Migrator.JobStats.
func (m *Manager) JobStats(ctx context.Context, name string, opts domain.JobStatsOptions) (*domain.JobStats, error) {
	var flags libvirt.DomainGetJobStatsFlags
	if opts.Completed {
		// KEEP_COMPLETED: libvirt otherwise forgets the completed job's
		// statistics once they are read, and a second reader (the
		// migration's caller and a monitor) would find none.
		flags |= libvirt.DOMAIN_JOB_STATS_COMPLETED | libvirt.DOMAIN_JOB_STATS_KEEP_COMPLETED
	}
	var info *libvirt.DomainJobInfo
	err := m.onDomain(ctx, domain.OpJobStats, name, func(d *libvirt.Domain) error {
		var err error
		info, err = d.GetJobStats(flags)
		return err
	})
	if err != nil {
		return nil, err
	}
	return convertJobStats(info), nil
}

func convertJobStats(i *libvirt.DomainJobInfo) *domain.JobStats {
	ms := func(v uint64) time.Duration { return time.Duration(v) * time.Millisecond }
	s := &domain.JobStats{
		Type:                 domain.JobType(i.Type),
		Elapsed:              ms(i.TimeElapsed),
		DataTotal:            i.DataTotal,
		DataProcessed:        i.DataProcessed,
		DataRemaining:        i.DataRemaining,
		MemoryTotal:          i.MemTotal,
		MemoryProcessed:      i.MemProcessed,
		MemoryRemaining:      i.MemRemaining,
		DiskTotal:            i.DiskTotal,
		DiskProcessed:        i.DiskProcessed,
		DiskRemaining:        i.DiskRemaining,
		MemoryBytesPerSecond: i.MemBps,
		Iteration:            i.MemIteration,
		PostcopyRequests:     i.MemPostcopyReqs,
		AutoConvergeThrottle: i.AutoConvergeThrottle,
		Downtime:             ms(i.Downtime),
		ErrorMessage:         i.ErrorMessage,
	}
	// libvirt counts the dirty rate in pages per second.
	if i.MemDirtyRateSet && i.MemPageSizeSet {
		s.DirtyBytesPerSecond = i.MemDirtyRate * i.MemPageSize
	}
	return s
}

// SetMigrationBandwidth calls virDomainMigrateSetMaxSpeed; zero lifts the
// limit (libvirt's largest value). See domain.Migrator.SetMigrationBandwidth.
func (m *Manager) SetMigrationBandwidth(ctx context.Context, name string, mibPerSecond uint64) error {
	if mibPerSecond == 0 || mibPerSecond > maxBandwidthMiB {
		mibPerSecond = maxBandwidthMiB
	}
	return m.onDomain(ctx, domain.OpSetMigrationBandwidth, name, func(d *libvirt.Domain) error {
		return d.MigrateSetMaxSpeed(mibPerSecond, 0)
	})
}

// StartPostCopy calls virDomainMigrateStartPostCopy; see
// domain.Migrator.StartPostCopy. It first lifts the post-copy bandwidth
// limit: QEMU 7.2 under libvirt 9.0 otherwise keeps sending the rest of the
// memory at the pre-copy limit (measured), so that a migration switched to
// post-copy because that limit made it late would stay as slow, with the
// guest running on the destination and faulting on every missing page.
func (m *Manager) StartPostCopy(ctx context.Context, name string) error {
	return m.onDomain(ctx, domain.OpStartPostCopy, name, func(d *libvirt.Domain) error {
		if err := d.MigrateSetMaxSpeed(maxBandwidthMiB, libvirt.MIGRATE_MAX_SPEED_POSTCOPY); err != nil {
			return err
		}
		return d.MigrateStartPostCopy(0)
	})
}

// AbortJob calls virDomainAbortJob; see domain.Migrator.AbortJob.
func (m *Manager) AbortJob(ctx context.Context, name string) error {
	return m.onDomain(ctx, domain.OpAbortJob, name, func(d *libvirt.Domain) error {
		return d.AbortJob()
	})
}
