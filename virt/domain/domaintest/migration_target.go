package domaintest

import (
	"context"
	"testing"
	"time"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/virt/domain"
)

// Host is one side of a migration: a Manager that can also migrate.
type Host interface {
	domain.Manager
	domain.Migrator
}

// MigrationTarget is a pair of hypervisors a domain migrates between, and
// the facts the migration suite needs about them.
type MigrationTarget struct {
	// Source runs the domains the suite migrates; Destination receives
	// them. RunMigration closes both at the end.
	Source, Destination Host
	// Domain returns a document for a domain named name that Source can
	// define and start, and that can migrate to Destination.
	Domain func(name string) *libvirtxml.Domain
	// Params returns where migrations go: DestinationURI (as Source's
	// daemon reaches Destination) and, where needed, MigrationURI and
	// ListenAddress. The suite sets the rest (DestinationXML, limits,
	// PostCopy, persistence). It is called once per migration, so that a
	// target can hand out a fresh port each time.
	Params func(t *testing.T) domain.MigrateParams
	// EditDestination, when set, edits the migratable document of a domain
	// into the one Destination gets (paths that differ there, such as the
	// serial console's log).
	EditDestination func(doc *libvirtxml.Domain)
	// Booted, when set, waits until the guest of a started domain is ready
	// to migrate (on a real hypervisor: booted), failing t if it is not.
	Booted func(t *testing.T, name string)
	// Timeout bounds each wait for a guest or a migration (default 30 s).
	Timeout time.Duration

	Caps MigrationCapabilities
}

// MigrationCapabilities say what a MigrationTarget can do. For each missing
// one the suite expects a precise failure instead.
type MigrationCapabilities struct {
	// PostCopy: StartPostCopy switches a migration started with
	// MigrateParams.PostCopy to post-copy; otherwise it fails with
	// ErrUnsupported.
	PostCopy bool
}

func (t *MigrationTarget) timeout() time.Duration {
	if t.Timeout > 0 {
		return t.Timeout
	}
	return 30 * time.Second
}

func (t *MigrationTarget) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), t.timeout())
}
