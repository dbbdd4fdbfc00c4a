package nodeapi

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	virtv1 "kubevirt.io/api/core/v1"

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
	var b []byte
	return b, c.do(ctx, http.MethodGet, namespace, name, VerbScreenshot, nil, MaxScreenshotBytes, &b)
}

// GuestOSInfo implements Ops.
func (c *Client) GuestOSInfo(ctx context.Context, namespace, name string) (virtv1.VirtualMachineInstanceGuestAgentInfo, error) {
	var v virtv1.VirtualMachineInstanceGuestAgentInfo
	return v, c.getJSON(ctx, namespace, name, VerbGuestOSInfo, &v)
}

// UserList implements Ops.
func (c *Client) UserList(ctx context.Context, namespace, name string) (virtv1.VirtualMachineInstanceGuestOSUserList, error) {
	var v virtv1.VirtualMachineInstanceGuestOSUserList
	return v, c.getJSON(ctx, namespace, name, VerbUserList, &v)
}

// FilesystemList implements Ops.
func (c *Client) FilesystemList(ctx context.Context, namespace, name string) (virtv1.VirtualMachineInstanceFileSystemList, error) {
	var v virtv1.VirtualMachineInstanceFileSystemList
	return v, c.getJSON(ctx, namespace, name, VerbFilesystemList, &v)
}

// Freeze implements Ops; the timeout goes in whole seconds.
func (c *Client) Freeze(ctx context.Context, namespace, name string, unfreezeTimeout time.Duration) error {
	return c.do(ctx, http.MethodPut, namespace, name, VerbFreeze, url.Values{"unfreezeTimeout": {strconv.Itoa(int(unfreezeTimeout / time.Second))}}, 64<<10, nil)
}

// Unfreeze implements Ops.
func (c *Client) Unfreeze(ctx context.Context, namespace, name string) error {
	return c.put(ctx, namespace, name, VerbUnfreeze)
}

// maxInfoBytes bounds a JSON answer of the agent's verbs: the lists are
// bounded by the handler (guestagent.MaxItems).
const maxInfoBytes = 4 << 20

func (c *Client) getJSON(ctx context.Context, namespace, name, verb string, out any) error {
	var body []byte
	if err := c.do(ctx, http.MethodGet, namespace, name, verb, nil, maxInfoBytes, &body); err != nil {
		return err
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("%s of VirtualMachineInstance %s/%s on the handler at %s: decoding the answer: %w", verb, namespace, name, c.base.Host, err)
	}
	return nil
}

// do makes one call; the body of a success, at most limit bytes, goes to
// *body when body is set.
func (c *Client) do(ctx context.Context, method, namespace, name, verb string, query url.Values, limit int, body *[]byte) error {
	what := fmt.Sprintf("%s VirtualMachineInstance %s/%s on the handler at %s", verb, namespace, name, c.base.Host)
	if err := c.secure(what); err != nil {
		return err
	}
	u := c.url("", namespace, name, verb)
	if query != nil {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w: %w", what, ErrUnavailable, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, int64(limit)+1))
	if err != nil {
		return fmt.Errorf("%s: %w: %w", what, ErrUnavailable, err)
	}
	if resp.StatusCode/100 != 2 {
		return errorFromResponse(resp.StatusCode, b, what)
	}
	if len(b) > limit {
		return fmt.Errorf("%s: the answer is larger than %d bytes", what, limit)
	}
	if body != nil {
		*body = b
	}
	return nil
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
	return c.do(ctx, http.MethodPut, namespace, name, verb, nil, 64<<10, nil)
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
