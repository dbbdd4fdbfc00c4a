package migrate

import (
	"context"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/virt/domain"
)

// Host is one end of a migration: a hypervisor connection that manages
// domains and migrates them. virt/domain/libvirt's Manager (a real
// libvirtd) and virt/domain/fake's Manager (in memory) are Hosts.
type Host interface {
	domain.Manager
	domain.Migrator
}

// Destination says where Run moves a domain.
type Destination struct {
	// URI is the destination's libvirt URI as the source's daemon dials it:
	// the migration is peer to peer, so the source's daemon, not the caller,
	// connects. For a daemon on the same host behind a unix socket, use the
	// remote driver's form "qemu+unix:///session?socket=PATH"
	// (virt/libvirtd.PeerSocketURI; a plain "qemu:///..." URI would name
	// the source daemon itself);
	// across nodes, a URI the node's handler forwards. Required.
	URI string
	// MigrationURI is where the guest's memory stream goes, the destination
	// QEMU listening, e.g. "tcp://10.0.0.2:49152". Empty lets libvirt pick
	// (the destination's host name, which must then resolve from the source).
	MigrationURI string
	// ListenAddress is the address the destination QEMU listens on for the
	// stream and any disk copy; empty is libvirt's default (all addresses).
	ListenAddress string
	// DisksURI is where the disk copy goes (WithCopyStorage), the
	// destination's NBD server listening, e.g. "unix:///run/x/disks.sock";
	// empty lets libvirt pick. A unix MigrationURI needs a unix DisksURI
	// for a disk copy.
	DisksURI string
	// EditXML, when set, receives the source's migratable document and
	// changes it into the destination's: the paths that differ there (disk
	// images, serial log, sockets). It must not change the guest's hardware.
	EditXML func(doc *libvirtxml.Domain) error
	// Host, when set, is the destination's own connection. Run then reads
	// the completed migration's statistics from it (the downtime is known
	// only there) and, when a migration does not complete while the source
	// still runs the guest, removes any domain of that name the destination
	// kept (libvirt normally removes it itself). Any Host will do.
	Host DestinationHost
}

// DestinationHost is what Run needs of the destination's connection: the
// domain's state and the completed migration's statistics, and removing
// what a failed migration left there.
type DestinationHost interface {
	State(ctx context.Context, name string) (domain.State, domain.Reason, error)
	JobStats(ctx context.Context, name string, opts domain.JobStatsOptions) (*domain.JobStats, error)
	Destroy(ctx context.Context, name string) error
	Undefine(ctx context.Context, name string) error
}

var _ DestinationHost = Host(nil)
