package domain

import (
	"errors"
	"strings"
)

// Sentinels that Manager errors match with errors.Is. Each says what a caller
// can do about the failure; the wrapped cause says what happened.
var (
	// ErrNotFound: no domain of that name exists on the connection.
	ErrNotFound = errors.New("domain not found")
	// ErrAlreadyExists: Define found a domain of that name.
	ErrAlreadyExists = errors.New("domain already exists")
	// ErrInvalidSpec: the hypervisor rejected a document (domain or device);
	// Error.Message carries its reason. Retrying the same document fails again.
	ErrInvalidSpec = errors.New("invalid domain specification")
	// ErrInvalidState: the operation does not apply in the domain's current
	// state (pausing a shut-off domain, starting a running one).
	ErrInvalidState = errors.New("operation invalid in the domain's state")
	// ErrConnectionLost: the hypervisor connection broke (the daemon stopped
	// or restarted) and could not be made again. The Manager dials again on
	// the next call, so retrying later is the remedy.
	ErrConnectionLost = errors.New("hypervisor connection lost")
	// ErrAgentUnavailable: no guest agent answered: none is configured, it
	// is not connected (yet), it does not answer, or the domain is not running.
	ErrAgentUnavailable = errors.New("guest agent unavailable")
	// ErrUnsupported: the hypervisor or its driver cannot do this at all.
	ErrUnsupported = errors.New("unsupported by the hypervisor")
	// ErrClosed: the Manager was closed.
	ErrClosed = errors.New("manager closed")
)

// Error is the error of a Manager operation: the operation, the domain, the
// sentinel a caller branches on (Kind, nil when none fits) and the cause.
// errors.Is matches both Kind and anything Err wraps, so a context deadline
// shows as errors.Is(err, context.DeadlineExceeded).
type Error struct {
	// Op is the Manager method, lower-case: "define", "start", "attach-device", ...
	Op string
	// Domain is the domain's name; empty for connection-wide operations.
	Domain string
	// Kind is one of this package's sentinels, or nil.
	Kind error
	// Message is the hypervisor's own explanation, when it gave one (for
	// ErrInvalidSpec: what is wrong with the document).
	Message string
	// Err is the underlying error (a libvirt error, a context error, ...).
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Domain != "" {
		b.WriteString("domain ")
		b.WriteString(quote(e.Domain))
		b.WriteString(": ")
	}
	b.WriteString(e.Op)
	if e.Kind != nil {
		b.WriteString(": ")
		b.WriteString(e.Kind.Error())
	}
	switch {
	case e.Message != "":
		b.WriteString(": ")
		b.WriteString(e.Message)
	case e.Err != nil:
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the sentinel and the cause, for errors.Is and errors.As.
func (e *Error) Unwrap() []error {
	var out []error
	if e.Kind != nil {
		out = append(out, e.Kind)
	}
	if e.Err != nil {
		out = append(out, e.Err)
	}
	return out
}

func quote(s string) string { return "\"" + s + "\"" }
