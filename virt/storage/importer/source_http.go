package importer

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// HTTPSource reads an image over HTTP or HTTPS, as CDI's http source.
//
// A response other than 2xx is an *Error naming the URL and the status:
// ReasonUnreachable (retryable) for 408, 425, 429 and 5xx, ReasonRefused
// for the others. A failed connection, and a body that stops for
// StallTimeout, are ReasonUnreachable; a certificate CABundle (or the
// system) does not trust is ReasonRefused. The password never appears in
// String() or in an error.
type HTTPSource struct {
	// URL is http:// or https://. User information in it is used as basic
	// auth when Username is empty, and never shown.
	URL string
	// CABundle is PEM; when set, its certificates are the only roots
	// trusted (none of the system's). It applies to the default client only.
	CABundle []byte
	// ProxyCABundle is PEM: roots trusted besides CABundle (or the
	// system's), those of the proxy of the environment (CDI's
	// trustedCAProxy). It applies to the default client only.
	ProxyCABundle []byte
	// Username and Password are sent as basic auth when Username != "".
	Username, Password string
	// Header holds extra request headers (CDI's extraHeaders).
	Header http.Header
	// Client, when set, is used with its transport, timeouts and TLS
	// settings. The default has timeouts for dialling, the TLS handshake
	// and the response headers, none for the whole transfer (images are
	// large), and does not ask for a transparently compressed body.
	Client *http.Client
	// Stall is how long the response may send nothing before the transfer
	// is abandoned as ReasonUnreachable, with either client; default
	// StallTimeout.
	Stall time.Duration
}

var _ Source = HTTPSource{}

// String is the URL without user information.
func (s HTTPSource) String() string {
	u, err := url.Parse(s.URL)
	if err != nil {
		return "(invalid URL)"
	}
	u.User = nil
	return u.String()
}

// Open sends the GET request and returns the body.
func (s HTTPSource) Open(ctx context.Context) (io.ReadCloser, int64, error) {
	name := s.String()
	u, err := url.Parse(s.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, 0, fail(ReasonRefused, name, errors.New("the URL must be http:// or https:// with a host"))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
	if err != nil {
		return nil, 0, fail(ReasonRefused, name, err)
	}
	client, closeIdle, err := s.client()
	if err != nil {
		return nil, 0, fail(ReasonRefused, name, err)
	}
	for k, vs := range s.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", "virtkit-importer")
	}
	if s.Username != "" {
		req.SetBasicAuth(s.Username, s.Password)
	}
	resp, err := client.Do(req)
	if err != nil {
		closeIdle()
		return nil, 0, requestError(ctx, name, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		resp.Body.Close()
		closeIdle()
		return nil, 0, fail(statusReason(resp.StatusCode), name, fmt.Errorf("HTTP status %s", resp.Status))
	}
	return &httpBody{body: resp.Body, closeIdle: closeIdle, name: name}, resp.ContentLength, nil
}

// statusReason says whether an HTTP error status may change by retrying.
func statusReason(code int) Reason {
	switch {
	case code == http.StatusRequestTimeout, code == http.StatusTooEarly, code == http.StatusTooManyRequests, code >= 500:
		return ReasonUnreachable
	}
	return ReasonRefused
}

// requestError classifies an error of client.Do for the request made
// with ctx.
func requestError(ctx context.Context, name string, err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // it repeats the URL, with the password redacted but there
	}
	if ctx.Err() != nil {
		return fmt.Errorf("GET %s: %w", name, ctx.Err())
	}
	if untrusted(err) {
		return fail(ReasonRefused, name, fmt.Errorf("GET: %w", err))
	}
	return fail(ReasonUnreachable, name, fmt.Errorf("GET: %w", err))
}

// untrusted says whether err is a TLS certificate that was not trusted.
func untrusted(err error) bool {
	var (
		verify    *tls.CertificateVerificationError
		authority x509.UnknownAuthorityError
		host      x509.HostnameError
		invalid   x509.CertificateInvalidError
	)
	return errors.As(err, &verify) || errors.As(err, &authority) || errors.As(err, &host) || errors.As(err, &invalid)
}

// client is s.Client, or a new default client, with a transport that
// gives up on a stalled body, and a closer of its idle connections.
func (s HTTPSource) client() (*http.Client, func(), error) {
	if s.Client != nil {
		c := *s.Client
		c.Transport = newStallTransport(c.Transport, s.Stall)
		return &c, func() {}, nil
	}
	tr, err := newTransport(s.CABundle, s.ProxyCABundle, false)
	if err != nil {
		return nil, nil, err
	}
	return &http.Client{Transport: newStallTransport(tr, s.Stall)}, tr.CloseIdleConnections, nil
}

// httpBody is a response body whose stall is ReasonUnreachable.
type httpBody struct {
	body      io.ReadCloser
	closeIdle func()
	name      string
}

func (b *httpBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	if errors.Is(err, errStalled) {
		err = fail(ReasonUnreachable, b.name, err)
	}
	return n, err
}

func (b *httpBody) Close() error {
	err := b.body.Close()
	b.closeIdle()
	return err
}
