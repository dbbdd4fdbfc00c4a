package migrate

import (
	"errors"
	"strings"

	virtv1 "kubevirt.io/api/core/v1"
)

// Reasons a migration did not complete, for errors.Is on Run's error. After
// any of them but a failure in post-copy, the guest still runs on the
// source (Run aborted the migration, resumed a guest it had paused, and
// removed what the destination kept).
var (
	// ErrCompletionTimeout: the migration ran past its completion timeout
	// (Config.CompletionTimeout) and neither post-copy nor pausing the
	// guest was allowed, or even that did not help.
	ErrCompletionTimeout = errors.New("migration not completed in time")
	// ErrStalled: the data left to send did not shrink for
	// Config.ProgressTimeout, and post-copy was not allowed.
	ErrStalled = errors.New("migration made no progress")
	// ErrCancelled: the caller's context ended during pre-copy. The error
	// also matches the context's error.
	ErrCancelled = errors.New("migration cancelled")
	// ErrFailed: the hypervisor reported the migration failed (the
	// destination refused it, the stream broke, ...), or it could not
	// start; Error.Message carries the hypervisor's words. When Error.Mode
	// is post-copy the guest may be lost: it was running on the
	// destination, which lacks part of its memory.
	ErrFailed = errors.New("migration failed")
)

// Error is Run's error when a migration did not complete: why (Reason, one
// of the sentinels above), the mode it was in, and the hypervisor's
// message. errors.Is matches Reason and anything Err wraps.
type Error struct {
	// Domain is the migrated domain's name.
	Domain string
	// Reason is ErrCompletionTimeout, ErrStalled, ErrCancelled or ErrFailed.
	Reason error
	// Mode is the mode the migration was in when it ended.
	Mode virtv1.MigrationMode
	// Message explains the end: Run's own account for a timeout or a stall,
	// the hypervisor's message for a failure.
	Message string
	// Err is the underlying error: the context's for a cancel, the
	// Migrator's for a failure.
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("migrate domain \"")
	b.WriteString(e.Domain)
	b.WriteString("\": ")
	b.WriteString(e.Reason.Error())
	if e.Mode != "" {
		b.WriteString(" (")
		b.WriteString(string(e.Mode))
		b.WriteString(")")
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

// Unwrap returns the reason and the cause, for errors.Is and errors.As.
func (e *Error) Unwrap() []error {
	out := []error{e.Reason}
	if e.Err != nil {
		out = append(out, e.Err)
	}
	return out
}
