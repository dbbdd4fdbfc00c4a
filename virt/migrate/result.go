package migrate

import (
	"time"

	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/domain"
)

// Result describes a migration Run drove, complete or not.
type Result struct {
	// Domain is the migrated domain's name.
	Domain string
	// Mode is the mode the migration ended in: pre-copy; post-copy after a
	// switch; paused when the guest was paused to let it complete.
	Mode virtv1.MigrationMode
	// Started is when Run started the migration, by its clock.
	Started time.Time
	// Duration is how long the migration took, by Run's clock, from its
	// start until the hypervisor reported its end.
	Duration time.Duration
	// Downtime is how long the guest was paused at the switch-over, as the
	// hypervisor reported it for the completed migration. Zero when not
	// known: the migration did not complete, or no Destination.Host was
	// given to read it from.
	Downtime time.Duration
	// DataTotal and DataProcessed are the bytes to move (memory and copied
	// disks) and the bytes moved, with memory sent again after the guest
	// changed it.
	DataTotal, DataProcessed uint64
	// Iterations counts pre-copy passes over the guest's memory.
	Iterations uint64
	// CompletionTimeout is the completion timeout Run applied (zero: none).
	CompletionTimeout time.Duration
	// Stats are the last statistics seen: the destination's for the
	// completed migration when available, otherwise the last poll's. Nil
	// when none arrived.
	Stats *domain.JobStats
	// CleanedTarget is true when Run removed a domain the destination kept
	// after a migration that did not complete.
	CleanedTarget bool
}

// Progress is what Run reports at each poll of a running migration.
type Progress struct {
	// Domain is the migrated domain's name.
	Domain string
	// Mode is the migration's mode now.
	Mode virtv1.MigrationMode
	// Elapsed is the time since the migration started, by Run's clock.
	Elapsed time.Duration
	// CompletionTimeout is the completion timeout that applies (zero: none);
	// it doubles once the guest was paused to let the migration complete.
	CompletionTimeout time.Duration
	// SinceProgress is the time since the data left to send last shrank.
	SinceProgress time.Duration
	// Stats are the hypervisor's statistics of this poll.
	Stats domain.JobStats
}
