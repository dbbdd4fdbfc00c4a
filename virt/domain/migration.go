package domain

import (
	"context"
	"strconv"
	"time"

	"libvirt.org/go/libvirtxml"
)

// Migrator is the migration side of a hypervisor connection: what a live
// migration needs beyond Manager. virt/domain/libvirt and virt/domain/fake
// implement it next to Manager; virt/migrate drives it (policy, timeouts,
// post-copy, abort) and callers rarely need to call it themselves.
//
// Errors are *Error values as for Manager, with the Op* names below.
type Migrator interface {
	// MigratableXML returns the running domain's document as the
	// destination must receive it (libvirt's VIR_DOMAIN_XML_MIGRATABLE:
	// no runtime-only state), for editing into MigrateParams.DestinationXML
	// where paths differ on the destination.
	MigratableXML(ctx context.Context, name string) (*libvirtxml.Domain, error)
	// Migrate moves the running domain live to the hypervisor at
	// p.DestinationURI, peer to peer: this connection's daemon dials the
	// destination itself. It blocks until the migration ends and returns
	// nil once the domain runs on the destination. A migration that is
	// aborted (AbortJob) or fails returns an error carrying the
	// hypervisor's message, and the domain keeps running here.
	//
	// The migration outlives ctx, like every blocking call of a Manager:
	// to stop it, call AbortJob, then wait for Migrate to return.
	Migrate(ctx context.Context, name string, p MigrateParams) error
	// JobStats reports the progress of the running domain's current job (a
	// migration out or in), Type JobNone when there is none; a domain that
	// does not run fails with ErrInvalidState. With opts.Completed it
	// reports the last completed job instead: on a migration's destination
	// that is the migration, with its downtime (libvirt 9.0 reports none
	// for a post-copy migration).
	JobStats(ctx context.Context, name string, opts JobStatsOptions) (*JobStats, error)
	// SetMigrationBandwidth changes the pre-copy bandwidth limit of the
	// domain's running migration, in MiB/s; zero lifts the limit. A change
	// made before the migration's memory copy began is overridden by its
	// MigrateParams.BandwidthMiB when that is set.
	SetMigrationBandwidth(ctx context.Context, name string, mibPerSecond uint64) error
	// StartPostCopy switches the domain's running migration to post-copy:
	// the guest runs on the destination from then on and fetches the pages
	// it still lacks from here, and the rest of its memory is sent without
	// the pre-copy bandwidth limit. It needs a migration started with
	// MigrateParams.PostCopy, and cannot be undone: a post-copy migration
	// cannot be aborted, and if it fails the guest is lost.
	StartPostCopy(ctx context.Context, name string) error
	// AbortJob aborts the domain's running job (a pre-copy migration);
	// Migrate then returns an error and the domain keeps running here. It
	// fails with ErrInvalidState when no job runs or the migration is in
	// post-copy.
	AbortJob(ctx context.Context, name string) error
}

// MigrateParams say where and how Migrate moves a domain.
type MigrateParams struct {
	// DestinationURI is the destination hypervisor's libvirt URI as the
	// source's daemon dials it (peer to peer), e.g.
	// "qemu+unix:///system?socket=/run/peer/libvirt-sock" or
	// "qemu+tcp://node-b/system". A local URI such as "qemu:///system"
	// would name the source daemon itself. Required.
	DestinationURI string
	// MigrationURI is where the guest's memory stream goes, the
	// destination QEMU listening, e.g. "tcp://10.0.0.2:49152". Empty lets
	// libvirt pick the destination's host name and a port of its range.
	MigrationURI string
	// ListenAddress is the address the destination QEMU listens on for the
	// stream (and the disk copy); empty means libvirt's default (all).
	ListenAddress string
	// DisksURI is where the disk copy (CopyStorage) goes, the destination's
	// NBD server listening, e.g. "unix:///run/x/disks.sock" or
	// "tcp://10.0.0.2:49153"; empty lets libvirt pick (the migration's
	// host, a port of its range). With a unix MigrationURI, set a unix one
	// here too.
	DisksURI string
	// DestinationXML is the document the domain gets on the destination,
	// for paths that differ there (disks, serial logs, sockets). It must
	// describe the same guest (libvirt checks ABI stability); start from
	// MigratableXML. nil keeps the source's.
	DestinationXML *libvirtxml.Domain
	// BandwidthMiB limits the migration's bandwidth in MiB/s; zero is
	// unlimited.
	BandwidthMiB uint64
	// AutoConverge lets the hypervisor throttle the guest's vCPUs while
	// its memory changes faster than it can be sent.
	AutoConverge bool
	// PostCopy allows StartPostCopy during this migration (it still
	// starts in pre-copy).
	PostCopy bool
	// CopyStorage copies local disks to the destination during the
	// migration (not needed for storage both hosts share).
	CopyStorage StorageCopy
	// CopyDisks names the disks (targets such as "vda") CopyStorage
	// copies; empty means every writable disk that is not shared, read-only
	// or empty, as libvirt picks.
	CopyDisks []string
	// Persistent defines the domain on the destination too; without it the
	// domain is transient there.
	Persistent bool
	// UndefineSource removes the source's definition once the migration
	// succeeded.
	UndefineSource bool
	// Unsafe migrates even when the hypervisor deems it unsafe (local
	// disks with a cache mode other than none that are not copied), as
	// KubeVirt's unsafeMigrationOverride.
	Unsafe bool
	// ParallelConnections sends memory over that many connections at once;
	// zero or one is a single connection.
	ParallelConnections int
}

// StorageCopy says which disk contents a migration copies.
type StorageCopy int

const (
	// CopyNone copies no disk: disks are shared storage both hosts reach.
	CopyNone StorageCopy = iota
	// CopyIncremental copies what the source's disk images hold on top of
	// their backing files, which the destination already has (libvirt's
	// VIR_MIGRATE_NON_SHARED_INC): the right mode for copy-on-write overlays
	// of an image both hosts hold, such as container disks.
	CopyIncremental
	// CopyFull copies whole disks, backing chains flattened (libvirt's
	// VIR_MIGRATE_NON_SHARED_DISK).
	CopyFull
)

func (s StorageCopy) String() string {
	switch s {
	case CopyNone:
		return "none"
	case CopyIncremental:
		return "incremental"
	case CopyFull:
		return "full"
	}
	return "storage-copy(" + strconv.Itoa(int(s)) + ")"
}

// JobStatsOptions choose which job JobStats reports.
type JobStatsOptions struct {
	// Completed reports the last completed job instead of the current one.
	Completed bool
}

// JobType is a job's state, numbered as libvirt's virDomainJobType.
type JobType int

const (
	// JobNone: no job runs.
	JobNone JobType = 0
	// JobBounded: a job whose end can be predicted runs.
	JobBounded JobType = 1
	// JobUnbounded: a job whose end cannot be predicted runs (a migration).
	JobUnbounded JobType = 2
	// JobCompleted, JobFailed, JobCancelled: how a completed job ended.
	JobCompleted JobType = 3
	JobFailed    JobType = 4
	JobCancelled JobType = 5
)

// Active reports whether a job runs.
func (t JobType) Active() bool { return t == JobBounded || t == JobUnbounded }

func (t JobType) String() string {
	switch t {
	case JobNone:
		return "none"
	case JobBounded:
		return "bounded"
	case JobUnbounded:
		return "unbounded"
	case JobCompleted:
		return "completed"
	case JobFailed:
		return "failed"
	case JobCancelled:
		return "cancelled"
	}
	return "job(" + strconv.Itoa(int(t)) + ")"
}

// JobStats is the progress of a domain's job, as the hypervisor reports it.
// Counters it does not report are zero. Data counts memory and copied disks
// together; Memory and Disk split it.
type JobStats struct {
	Type JobType
	// Elapsed is the job's running time so far (or in all, once completed).
	Elapsed time.Duration
	// DataTotal, DataProcessed and DataRemaining are bytes. Remaining grows
	// again while the guest dirties memory already sent.
	DataTotal, DataProcessed, DataRemaining uint64
	// MemoryTotal, MemoryProcessed and MemoryRemaining are the memory's share, in bytes.
	MemoryTotal, MemoryProcessed, MemoryRemaining uint64
	// DiskTotal, DiskProcessed and DiskRemaining are the copied disks' share, in bytes.
	DiskTotal, DiskProcessed, DiskRemaining uint64
	// MemoryBytesPerSecond is the rate memory is sent at.
	MemoryBytesPerSecond uint64
	// DirtyBytesPerSecond is the rate the guest dirties memory at.
	DirtyBytesPerSecond uint64
	// Iteration counts pre-copy passes over memory.
	Iteration uint64
	// PostcopyRequests counts pages the destination asked for in post-copy.
	PostcopyRequests uint64
	// AutoConvergeThrottle is the share of vCPU time auto-converge takes
	// from the guest, in percent.
	AutoConvergeThrottle int
	// Downtime is how long the guest was paused at the switch-over, for a
	// completed migration; while one runs, the downtime expected if it
	// switched over now.
	Downtime time.Duration
	// ErrorMessage is the reason a completed job failed, when reported.
	ErrorMessage string
}

// Operation names of Migrator, as Error.Op reports them and fakes accept
// them for failure injection.
const (
	OpMigratableXML         = "migratable-xml"
	OpMigrate               = "migrate"
	OpJobStats              = "job-stats"
	OpSetMigrationBandwidth = "set-migration-bandwidth"
	OpStartPostCopy         = "start-post-copy"
	OpAbortJob              = "abort-job"
)
