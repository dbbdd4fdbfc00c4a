package nodeapi

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/virtkit/virtkit/internal/wsstream"
)

// Client calls one node's handler over HTTP(S): virt-api's side of Ops.
// Build one per request with the Endpoint a Locator returns; it holds no
// connection between calls beyond its transport's idle pool.
type Client struct {
	base  *url.URL
	tls   *tls.Config
	http  *http.Client
	plain bool
}

var _ Ops = (*Client)(nil)

// ClientOption changes a Client.
type ClientOption func(*Client)

// WithTimeout bounds each pause, unpause and soft reboot call (default 10 s,
// as KubeVirt's virt-api). Streams are not bounded.
func WithTimeout(d time.Duration) ClientOption { return func(c *Client) { c.http.Timeout = d } }

// AllowPlainHTTP lets the client call an http:// endpoint, for tests
// only: a node API without TLS lets anyone who reaches its port pause a
// guest or read its console. Without it such a call fails with ErrInsecure.
func AllowPlainHTTP() ClientOption { return func(c *Client) { c.plain = true } }

// NewClient returns a client for the handler at ep.
func NewClient(ep Endpoint, opts ...ClientOption) *Client {
	c := &Client{
		base: ep.URL,
		tls:  ep.TLS,
		// No proxy: handlers are reached on the cluster network.
		http: &http.Client{Transport: &http.Transport{TLSClientConfig: ep.TLS}, Timeout: 10 * time.Second},
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Pause implements Ops.
func (c *Client) Pause(ctx context.Context, namespace, name string) error {
	return c.put(ctx, namespace, name, VerbPause)
}

// Unpause implements Ops.
func (c *Client) Unpause(ctx context.Context, namespace, name string) error {
	return c.put(ctx, namespace, name, VerbUnpause)
}

// SoftReboot implements Ops.
func (c *Client) SoftReboot(ctx context.Context, namespace, name string) error {
	return c.put(ctx, namespace, name, VerbSoftReboot)
}

// Reset implements Ops.
func (c *Client) Reset(ctx context.Context, namespace, name string) error {
	return c.put(ctx, namespace, name, VerbReset)
}

// Console implements Ops. ctx bounds the handshake only; Close ends the stream.
func (c *Client) Console(ctx context.Context, namespace, name string) (io.ReadWriteCloser, error) {
	return c.dial(ctx, namespace, name, VerbConsole)
}

// VNC implements Ops. ctx bounds the handshake only; Close ends the stream.
func (c *Client) VNC(ctx context.Context, namespace, name string) (io.ReadWriteCloser, error) {
	return c.dial(ctx, namespace, name, VerbVNC)
}

// Screenshot implements Ops: the PNG, at most MaxScreenshotBytes.
func (c *Client) Screenshot(ctx context.Context, namespace, name string) ([]byte, error) {
	what := fmt.Sprintf("screenshot of VirtualMachineInstance %s/%s on the handler at %s", namespace, name, c.base.Host)
	if err := c.secure(what); err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url("", namespace, name, VerbScreenshot), nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", what, ErrUnavailable, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return nil, errorFromResponse(resp.StatusCode, body, what)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxScreenshotBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", what, ErrUnavailable, err)
	}
	if len(b) > MaxScreenshotBytes {
		return nil, fmt.Errorf("%s: the image is larger than %d bytes", what, MaxScreenshotBytes)
	}
	return b, nil
}

func (c *Client) url(scheme, namespace, name, verb string) string {
	u := *c.base
	if scheme != "" {
		u.Scheme = scheme
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + vmiPath(namespace, name, verb)
	u.RawPath = ""
	return u.String()
}

// secure refuses an endpoint that is not https, unless AllowPlainHTTP.
func (c *Client) secure(what string) error {
	if c.base.Scheme != "https" && !c.plain {
		return fmt.Errorf("%s: %w: %s", what, ErrInsecure, c.base.Redacted())
	}
	return nil
}

func (c *Client) put(ctx context.Context, namespace, name, verb string) error {
	what := fmt.Sprintf("%s VirtualMachineInstance %s/%s on the handler at %s", verb, namespace, name, c.base.Host)
	if err := c.secure(what); err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, c.url("", namespace, name, verb), nil)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w: %w", what, ErrUnavailable, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 == 2 {
		return nil
	}
	return errorFromResponse(resp.StatusCode, body, what)
}

func (c *Client) dial(ctx context.Context, namespace, name, verb string) (io.ReadWriteCloser, error) {
	what := fmt.Sprintf("%s of VirtualMachineInstance %s/%s on the handler at %s", verb, namespace, name, c.base.Host)
	if err := c.secure(what); err != nil {
		return nil, err
	}
	scheme := "wss"
	if c.base.Scheme == "http" {
		scheme = "ws"
	}
	d := wsstream.Dialer()
	d.TLSClientConfig = c.tls
	ws, resp, err := d.DialContext(ctx, c.url(scheme, namespace, name, verb), nil)
	if err != nil {
		if resp != nil {
			defer resp.Body.Close()
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			return nil, errorFromResponse(resp.StatusCode, body, what)
		}
		return nil, fmt.Errorf("%s: %w: %w", what, ErrUnavailable, err)
	}
	return wsstream.New(ws), nil
}
