package nodeapi

import (
	"context"
	"errors"
	"io"
	"time"

	virtv1 "kubevirt.io/api/core/v1"
)

// Ops is what a node's handler does on request for one VMI it runs,
// identified by namespace and name. Errors wrap one of the sentinels below
// so the server can answer with the matching HTTP status.
type Ops interface {
	// Pause stops the guest's vCPUs. A paused guest gives ErrConflict.
	Pause(ctx context.Context, namespace, name string) error
	// Unpause lets a paused guest run again. A running guest gives ErrConflict.
	Unpause(ctx context.Context, namespace, name string) error
	// SoftReboot asks the guest to reboot (ACPI, or the guest agent when
	// connected). A paused guest gives ErrConflict.
	SoftReboot(ctx context.Context, namespace, name string) error
	// Reset presses the guest's reset button: it restarts at once, without
	// shutting down. A guest that is not running or paused gives
	// ErrConflict.
	Reset(ctx context.Context, namespace, name string) error
	// Console opens the guest's first serial console as a byte stream.
	Console(ctx context.Context, namespace, name string) (io.ReadWriteCloser, error)
	// VNC opens the guest's VNC server as a byte stream (RFB).
	VNC(ctx context.Context, namespace, name string) (io.ReadWriteCloser, error)
	// Screenshot returns the guest's display as a PNG. A guest without a
	// graphics device gives ErrUnavailable.
	Screenshot(ctx context.Context, namespace, name string) ([]byte, error)
	// GuestOSInfo is what the guest's agent says of itself: its version,
	// the guest's OS, host name and time zone, users and file systems. A
	// guest whose agent does not answer gives ErrUnavailable.
	GuestOSInfo(ctx context.Context, namespace, name string) (virtv1.VirtualMachineInstanceGuestAgentInfo, error)
	// UserList is the guest's logged-in users, from its agent.
	UserList(ctx context.Context, namespace, name string) (virtv1.VirtualMachineInstanceGuestOSUserList, error)
	// FilesystemList is the guest's mounted file systems, from its agent.
	FilesystemList(ctx context.Context, namespace, name string) (virtv1.VirtualMachineInstanceFileSystemList, error)
	// Freeze freezes the guest's file systems through its agent until
	// Unfreeze, or until unfreezeTimeout passes (zero: no limit). Freezing
	// a frozen guest succeeds and restarts the limit.
	Freeze(ctx context.Context, namespace, name string, unfreezeTimeout time.Duration) error
	// Unfreeze thaws the guest's file systems; a thawed guest stays so.
	Unfreeze(ctx context.Context, namespace, name string) error
}

// MaxScreenshotBytes bounds a PNG the node API carries: the largest
// uncompressed capture a handler reads, as PNG never grows past it by much.
const MaxScreenshotBytes = 64<<20 + 1<<20

var (
	// ErrNotFound: the VMI does not run on this node (HTTP 404).
	ErrNotFound = errors.New("vmi not running on this node")
	// ErrConflict: the VMI's state does not allow the verb (HTTP 409).
	ErrConflict = errors.New("vmi state conflicts with the request")
	// ErrUnavailable: the VMI has no such device, or the node cannot
	// reach it right now (HTTP 503).
	ErrUnavailable = errors.New("unavailable")
	// ErrInsecure: the endpoint is not https (see AllowPlainHTTP).
	ErrInsecure = errors.New("the node API is reached only over TLS; refusing a plain http endpoint")
)
