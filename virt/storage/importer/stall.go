package importer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// StallTimeout is how long a web or registry response may send nothing
// before the transfer is abandoned as ReasonUnreachable, unless a source's
// Stall says otherwise.
const StallTimeout = 2 * time.Minute

var errStalled = errors.New("no data")

// stallTransport ends a response whose body sends nothing for stall: the
// request's context is cancelled (which closes the connection however the
// transport reads it), and the body's reads then fail with errStalled.
// Both sources use it: the web source for its one request, the registry
// source for every request go-containerregistry makes.
type stallTransport struct {
	next  http.RoundTripper
	stall time.Duration
}

func newStallTransport(next http.RoundTripper, stall time.Duration) stallTransport {
	if next == nil {
		next = http.DefaultTransport
	}
	if stall <= 0 {
		stall = StallTimeout
	}
	return stallTransport{next: next, stall: stall}
}

func (t stallTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(r.Context())
	resp, err := t.next.RoundTrip(r.WithContext(ctx))
	if err != nil {
		cancel(nil)
		return nil, err
	}
	b := &stallBody{ctx: ctx, body: resp.Body, cancel: cancel, stall: t.stall}
	b.timer = time.AfterFunc(t.stall, func() { cancel(fmt.Errorf("%w for %s", errStalled, t.stall)) })
	resp.Body = b
	return resp, nil
}

// stallBody is a response body whose request is cancelled when it sends
// nothing for stall.
type stallBody struct {
	ctx    context.Context
	body   io.ReadCloser
	cancel context.CancelCauseFunc
	stall  time.Duration
	timer  *time.Timer
}

func (b *stallBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	if n > 0 {
		b.timer.Reset(b.stall)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		if cause := context.Cause(b.ctx); errors.Is(cause, errStalled) {
			err = cause
		}
	}
	return n, err
}

func (b *stallBody) Close() error {
	b.timer.Stop()
	err := b.body.Close()
	b.cancel(nil)
	return err
}
