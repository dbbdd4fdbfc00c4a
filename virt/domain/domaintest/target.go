package domaintest

import (
	"context"
	"regexp"
	"time"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/virt/domain"
)

// Target is one Manager under test and the facts the suite needs about it.
type Target struct {
	// Manager is the implementation under test. Run closes it at the end.
	Manager domain.Manager
	// Domain returns a document for a domain named name that the Manager
	// can define and start (on a real hypervisor: one that boots a guest).
	Domain func(name string) *libvirtxml.Domain
	// Disk is a device the suite attaches and detaches (target vdb); on a
	// real hypervisor its source must exist.
	Disk *libvirtxml.DomainDisk
	// Timeout bounds each wait for the guest or for events (default 10 s).
	Timeout time.Duration

	// ConsoleLog, for a real guest, returns what the guest has printed on
	// its serial console so far (its log file). The suite reads boot
	// markers from it. Nil when no real guest boots.
	ConsoleLog func(name string) (string, error)
	// Booted matches the line a real guest prints when it has booted, and
	// Ready the line it prints once it reacts to the ACPI power button.
	Booted, Ready *regexp.Regexp
	// ConsoleLine matches a line the Console stream must deliver: a line a
	// real guest prints by itself, or the one GuestSays makes it print.
	ConsoleLine *regexp.Regexp
	// GuestSays, for a fake guest, makes it print line on its console.
	GuestSays func(name, line string)

	// Block, when set, makes the hypervisor stop answering (a stopped
	// daemon, a held fake operation) until unblock is called; the suite
	// then checks that a call returns its context's error in time. Without
	// it the suite checks only a call with an already expired context.
	Block func() (unblock func())

	Caps Capabilities
}

// Capabilities say what the hypervisor behind a Target can do. For each
// missing one the suite expects a precise failure instead.
type Capabilities struct {
	// RealGuest: a guest really boots, so console markers can be awaited.
	RealGuest bool
	// StartPaused: Start with Paused works; otherwise it fails with ErrUnsupported.
	StartPaused bool
	// ACPIShutdown: Shutdown ends in shut-off with reason shutdown.
	ACPIShutdown bool
	// Console: Console streams the serial console; otherwise ErrUnsupported.
	Console bool
	// Agent: a guest agent answers; otherwise agent calls fail with ErrAgentUnavailable.
	Agent bool
	// Screenshot: the Domain has a video device and Screenshot captures
	// it; otherwise Screenshot fails with ErrUnsupported.
	Screenshot bool
	// Hotplug: AttachDevice and DetachDevice work on a running domain;
	// otherwise they fail with ErrUnsupported.
	Hotplug bool
	// Resize: the Manager is a domain.Resizer and its hypervisor hot-plugs
	// vCPUs and virtio-mem memory; without it the step is skipped.
	Resize bool
	// MediaChange: the Manager is a domain.DeviceUpdater that changes a
	// CD-ROM's media; without it the step is skipped.
	MediaChange bool
	// DeviceEvents: live attach and detach report EventDeviceAdded and
	// EventDeviceRemoved.
	DeviceEvents bool
}

func (t *Target) timeout() time.Duration {
	if t.Timeout > 0 {
		return t.Timeout
	}
	return 10 * time.Second
}

func (t *Target) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), t.timeout())
}
