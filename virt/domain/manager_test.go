package domain_test

import (
	"context"
	"errors"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/virtkit/virtkit/virt/domain"
)

func TestErrorNamesDomainAndMatchesSentinelAndCause(t *testing.T) {
	cause := errors.New("virError(Code=42)")
	err := error(&domain.Error{Op: domain.OpDefine, Domain: "vm", Kind: domain.ErrInvalidSpec, Message: "XML error: bad", Err: cause})
	assert.Equal(t, err.Error(), `domain "vm": define: invalid domain specification: XML error: bad`)
	assert.Assert(t, errors.Is(err, domain.ErrInvalidSpec))
	assert.Assert(t, errors.Is(err, cause))
	assert.Assert(t, !errors.Is(err, domain.ErrNotFound))

	deadline := error(&domain.Error{Op: domain.OpState, Domain: "vm", Err: context.DeadlineExceeded})
	assert.Assert(t, errors.Is(deadline, context.DeadlineExceeded))
	assert.Equal(t, deadline.Error(), `domain "vm": state: context deadline exceeded`)
}

func TestStateAndReasonNames(t *testing.T) {
	assert.Equal(t, domain.StateShutoff.String(), "shutoff")
	assert.Equal(t, domain.ReasonString(domain.StateShutoff, domain.ReasonShutoffDestroyed), "destroyed")
	assert.Equal(t, domain.ReasonString(domain.StatePaused, domain.ReasonPausedUser), "user")
	assert.Equal(t, domain.ReasonString(domain.StateRunning, 99), "reason(99)")
	assert.Equal(t, domain.State(42).String(), "state(42)")
}

// pipeConsole is a console whose guest side the test writes.
type pipeConsole struct {
	*io.PipeReader
	w *io.PipeWriter
}

func (p pipeConsole) Write(b []byte) (int, error) { return len(b), nil }
func (p pipeConsole) Close() error                { return p.PipeReader.Close() }

func TestWaitConsoleLine(t *testing.T) {
	r, w := io.Pipe()
	c := pipeConsole{r, w}
	go func() { _, _ = io.WriteString(w, "noise\r\nVIRTKIT-HEARTBEAT 3\r\nmore\n") }()
	line, err := domain.WaitConsoleLine(context.Background(), c, regexp.MustCompile(`^VIRTKIT-HEARTBEAT \d+$`))
	assert.NilError(t, err)
	assert.Equal(t, line, "VIRTKIT-HEARTBEAT 3")

	// When the context ends first, the console is closed and the wait ends.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	r2, w2 := io.Pipe()
	defer w2.Close()
	_, err = domain.WaitConsoleLine(ctx, pipeConsole{r2, w2}, regexp.MustCompile(`never`))
	assert.Assert(t, errors.Is(err, context.DeadlineExceeded), err)
	assert.Assert(t, strings.Contains(err.Error(), "never"))
}
