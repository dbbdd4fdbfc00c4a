package nodeapi

import (
	"context"
	"errors"
	"io"
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
