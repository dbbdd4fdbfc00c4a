package domain

import (
	"context"
	"io"
	"time"

	"libvirt.org/go/libvirtxml"
)

// Manager drives the domains of one hypervisor connection. virt/domain/libvirt
// implements it on libvirt; virt/domain/fake in memory; both pass the contract
// suite in virt/domain/domaintest.
//
// Every method takes a context first and returns when it ends, with an error
// that wraps ctx.Err() (the hypervisor may still complete the request
// afterwards: a blocking call cannot be taken back). Errors are *Error values
// naming the operation and the domain; branch on them with errors.Is and the
// sentinels of this package (ErrNotFound, ErrAlreadyExists, ...).
//
// A Manager is safe for concurrent use.
type Manager interface {
	// Define makes doc a persistent domain, shut off. It fails with
	// ErrAlreadyExists when a domain of that name exists (Define never
	// silently replaces a definition) and with ErrInvalidSpec, carrying the
	// hypervisor's message, when the hypervisor rejects the document.
	Define(ctx context.Context, doc *libvirtxml.Domain) error
	// Start boots a defined, shut-off domain, paused when opts.Paused.
	Start(ctx context.Context, name string, opts StartOptions) error
	// Shutdown asks the guest to power off by pressing its ACPI power button
	// and returns once the request is delivered, not when the guest is off:
	// watch Events or State for StateShutoff. A guest that ignores ACPI
	// keeps running; Destroy ends it.
	Shutdown(ctx context.Context, name string) error
	// Destroy powers a running or paused domain off at once (shut-off
	// reason destroyed). The definition stays.
	Destroy(ctx context.Context, name string) error
	// Reboot asks the guest to reboot (ACPI); the domain keeps running.
	Reboot(ctx context.Context, name string) error
	// Reset presses the domain's reset button: the guest restarts at once,
	// without shutting down.
	Reset(ctx context.Context, name string) error
	// Pause stops the domain's vCPUs (state paused, reason user).
	Pause(ctx context.Context, name string) error
	// Resume lets a paused domain run again.
	Resume(ctx context.Context, name string) error
	// Undefine removes a domain's persistent definition. Its EFI variable
	// store stays: it is the guest's, kept where the launcher put it (the
	// pod's folder, or backend storage that outlives the pod). A running
	// domain keeps running as a transient one until it stops.
	Undefine(ctx context.Context, name string) error
	// State reports a domain's state and why it is in it.
	State(ctx context.Context, name string) (State, Reason, error)
	// XML returns the domain's document: the running one, or with
	// opts.Inactive the persistent definition that the next start uses.
	XML(ctx context.Context, name string, opts XMLOptions) (*libvirtxml.Domain, error)
	// List reports every domain of the connection, running or not, sorted by name.
	List(ctx context.Context) ([]Info, error)
	// Events subscribes to the lifecycle and device events of every domain
	// of the connection. Events of one domain arrive in the order they
	// happened; the channel is never full from the sender's view (the
	// subscriber's backlog is buffered) and is closed when ctx ends or the
	// Manager is closed. Events that happen while the connection is lost are
	// not seen: the stream then carries EventConnectionLost and, once the
	// Manager is connected again, EventConnectionRestored, after which a
	// subscriber should re-read the states it cares about.
	Events(ctx context.Context) (<-chan Event, error)
	// Stats reports a domain's resource usage counters. Counters a
	// hypervisor does not report are zero.
	Stats(ctx context.Context, name string) (*Stats, error)
	// AttachDevice adds a device (a libvirtxml device such as
	// *libvirtxml.DomainDisk, or DeviceXML) to the running domain, its
	// persistent definition, or both, as flags say.
	AttachDevice(ctx context.Context, name string, dev Device, flags DeviceFlags) error
	// DetachDevice removes a device matching dev. Live removal needs the
	// guest's cooperation (PCI unplug) and may complete after it returns:
	// EventDeviceRemoved says when it did.
	DetachDevice(ctx context.Context, name string, dev Device, flags DeviceFlags) error
	// GuestAgentPing checks that the guest agent answers. It fails with
	// ErrAgentUnavailable when the domain has no agent channel, the agent is
	// not connected, or it does not answer.
	GuestAgentPing(ctx context.Context, name string) error
	// GuestAgentCommand sends a QEMU guest agent command, JSON such as
	// {"execute":"guest-info"}, and returns the agent's JSON reply. timeout
	// bounds the agent's answer; zero means the hypervisor's default. It
	// fails like GuestAgentPing when no agent answers.
	GuestAgentCommand(ctx context.Context, name, command string, timeout time.Duration) (string, error)
	// Console connects to the domain's first serial console: reads return
	// what the guest writes, writes reach the guest. ctx bounds the
	// connecting; Close ends the stream. A new console session takes over
	// from an earlier one of the same domain, which then ends. Fails with
	// ErrUnsupported when the hypervisor cannot stream the console (libvirt
	// needs a serial device of type pty).
	Console(ctx context.Context, name string) (io.ReadWriteCloser, error)
	// Screenshot captures the primary display of a running domain, in the
	// format the hypervisor chooses (Screenshot.MIME; PNG gives a PNG).
	// A domain with no video device fails with ErrUnsupported, one that
	// is not running with ErrInvalidState, an image larger than
	// MaxScreenshotBytes with an error.
	Screenshot(ctx context.Context, name string) (Screenshot, error)
	// Close releases the connection and ends every event subscription.
	// Operations after Close fail with ErrClosed.
	Close() error
}

// StartOptions change how Start boots a domain.
type StartOptions struct {
	// Paused starts the domain with its vCPUs stopped (state paused); Resume runs it.
	Paused bool
}

// XMLOptions choose which document XML returns.
type XMLOptions struct {
	// Inactive returns the persistent definition instead of the running document.
	Inactive bool
}

// Info describes one domain in a List.
type Info struct {
	Name string
	UUID string
	// Persistent is false for a transient domain: it disappears when it stops.
	Persistent bool
	State      State
	Reason     Reason
}

// Device is a domain device document: every libvirtxml device type
// (*libvirtxml.DomainDisk, *libvirtxml.DomainInterface, ...) is one, and so is
// DeviceXML.
type Device interface {
	Marshal() (string, error)
}

// DeviceXML is a device given as its XML text, e.g. "<disk ...>...</disk>".
type DeviceXML string

// Marshal returns the XML text.
func (d DeviceXML) Marshal() (string, error) { return string(d), nil }

// DeviceFlags choose where AttachDevice and DetachDevice apply. Zero is not
// allowed: say where.
type DeviceFlags uint

const (
	// DeviceLive changes the running domain.
	DeviceLive DeviceFlags = 1 << iota
	// DevicePersistent changes the persistent definition.
	DevicePersistent
)

func (f DeviceFlags) String() string {
	switch f {
	case DeviceLive:
		return "live"
	case DevicePersistent:
		return "persistent"
	case DeviceLive | DevicePersistent:
		return "live+persistent"
	}
	return "none"
}

// Operation names, as Error.Op reports them and fakes accept them for
// failure injection.
const (
	OpConnect           = "connect"
	OpDefine            = "define"
	OpStart             = "start"
	OpShutdown          = "shutdown"
	OpDestroy           = "destroy"
	OpReboot            = "reboot"
	OpReset             = "reset"
	OpPause             = "pause"
	OpResume            = "resume"
	OpUndefine          = "undefine"
	OpState             = "state"
	OpXML               = "xml"
	OpList              = "list"
	OpEvents            = "events"
	OpStats             = "stats"
	OpAttachDevice      = "attach-device"
	OpDetachDevice      = "detach-device"
	OpGuestAgentPing    = "guest-agent-ping"
	OpGuestAgentCommand = "guest-agent-command"
	OpConsole           = "console"
	OpScreenshot        = "screenshot"
)
