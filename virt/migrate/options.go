package migrate

import (
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	"github.com/virtkit/virtkit/virt/domain"
)

// Option changes how Run drives a migration.
type Option func(*options)

type options struct {
	clock       clock.Clock
	log         logr.Logger
	interval    time.Duration
	callTimeout time.Duration
	abortWait   time.Duration
	progress    func(Progress)
	dataSize    int64
	copyStorage domain.StorageCopy
	copyDisks   []string
	edits       []func(*domain.MigrateParams)
}

// Defaults of Run's options.
const (
	// DefaultPollInterval is how often Run reads a migration's progress,
	// as often as KubeVirt's monitor.
	DefaultPollInterval = 400 * time.Millisecond
	// DefaultCallTimeout bounds each hypervisor call Run makes besides the
	// migration itself, so that a hung daemon cannot hold it forever.
	DefaultCallTimeout = 30 * time.Second
	// DefaultAbortWait is how long Run waits, after aborting, for the
	// hypervisor to end the migration.
	DefaultAbortWait = time.Minute
)

func defaultOptions() options {
	return options{
		clock:       clock.RealClock{},
		log:         logr.Discard(),
		interval:    DefaultPollInterval,
		callTimeout: DefaultCallTimeout,
		abortWait:   DefaultAbortWait,
	}
}

// WithClock sets the clock Run measures time and timeouts with and waits
// between polls on (default: the real one). Tests pass a
// k8s.io/utils/clock/testing FakeClock and step it.
func WithClock(c clock.Clock) Option { return func(o *options) { o.clock = c } }

// WithLogger sets the logger for the migration's milestones: start,
// switch to post-copy, pause, abort, end. The default discards.
func WithLogger(l logr.Logger) Option { return func(o *options) { o.log = l } }

// WithPollInterval sets how often Run reads the migration's progress
// (default DefaultPollInterval). Timeouts are checked at each poll.
func WithPollInterval(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.interval = d
		}
	}
}

// WithCallTimeout bounds each hypervisor call Run makes besides the
// migration itself (default DefaultCallTimeout).
func WithCallTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.callTimeout = d
		}
	}
}

// WithAbortWait sets how long Run waits for the hypervisor to end a
// migration it aborted (default DefaultAbortWait).
func WithAbortWait(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.abortWait = d
		}
	}
}

// WithProgress calls f at each poll of the running migration, on Run's
// goroutine: it must return quickly. It may call the source's
// SetMigrationBandwidth to change the limit on the fly.
func WithProgress(f func(Progress)) Option { return func(o *options) { o.progress = f } }

// WithDataSize sets the bytes the migration moves for the completion
// timeout (see DataSize and Config.CompletionTimeout), as KubeVirt counts
// them from the VMI. By default Run takes the total the hypervisor reports
// at the first poll (memory plus copied disks).
func WithDataSize(bytes int64) Option { return func(o *options) { o.dataSize = bytes } }

// WithCopyStorage copies local disks to the destination during the
// migration: incremental for copy-on-write overlays whose backing images
// the destination holds too, full otherwise. disks names the disk targets
// ("vda") to copy; none means every non-shared writable disk.
func WithCopyStorage(mode domain.StorageCopy, disks ...string) Option {
	return func(o *options) { o.copyStorage, o.copyDisks = mode, disks }
}

// WithParams edits the migration's parameters after Run made them from the
// Config and the Destination: the last word on anything (keep the source
// defined with UndefineSource false, a transient destination with
// Persistent false, parallel connections, ...).
func WithParams(edit func(*domain.MigrateParams)) Option {
	return func(o *options) { o.edits = append(o.edits, edit) }
}
