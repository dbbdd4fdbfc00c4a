package upload

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// SendError is an upload server's refusal of what Send sent.
type SendError struct {
	// Code is the server's status code; Message its answer.
	Code    int
	Message string
}

func (e *SendError) Error() string {
	return fmt.Sprintf("the upload server answered %d: %s", e.Code, e.Message)
}

// Retryable says whether sending again may help: the server was busy or
// could not take the data yet (5xx), rather than refusing it (4xx).
func (e *SendError) Retryable() bool { return e.Code >= 500 }

// Send posts body, size bytes (-1: unknown), to the upload server at base
// with cfg (a client certificate it trusts, its own certificate pinned),
// as a clone's source pod does. An error that is not a *SendError is the
// connection's, and worth retrying.
func Send(ctx context.Context, base *url.URL, cfg *tls.Config, body io.Reader, size int64) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base.JoinPath(Path).String(), io.NopCloser(body))
	if err != nil {
		return err
	}
	req.ContentLength = size
	req.Header.Set("Content-Type", "application/octet-stream")
	tr := &http.Transport{TLSClientConfig: cfg, WriteBufferSize: copyBuffer, ReadBufferSize: copyBuffer}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return fmt.Errorf("sending to the upload server at %s: %w", base.Host, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, maxReply))
	if resp.StatusCode != http.StatusOK {
		return &SendError{Code: resp.StatusCode, Message: strings.TrimSpace(string(msg))}
	}
	return nil
}

// IsFinal says whether err from Send is a refusal no retry mends.
func IsFinal(err error) bool {
	var se *SendError
	return errors.As(err, &se) && !se.Retryable()
}
