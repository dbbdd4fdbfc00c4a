package subresources

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/internal/wsstream"
	"github.com/virtkit/virtkit/virtapi/nodeapi"
)

// Client calls the subresources API through the apiserver, on the wire as
// KubeVirt's virtctl does: the verbs are PUTs with a JSON options body,
// console and VNC are websockets with the plain.kubevirt.io subprotocol.
// Errors are *StatusError values carrying the server's metav1.Status.
type Client struct {
	cfg  *rest.Config
	http *http.Client
}

// NewClient returns a Client for the apiserver of cfg.
func NewClient(cfg *rest.Config) (*Client, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("subresources client: %w", err)
	}
	return &Client{cfg: rest.CopyConfig(cfg), http: hc}, nil
}

// StatusError is a refusal from the server: its Status says why.
type StatusError struct{ Status metav1.Status }

func (e *StatusError) Error() string {
	if e.Status.Message != "" {
		return e.Status.Message
	}
	return fmt.Sprintf("%d %s", e.Status.Code, e.Status.Reason)
}

// Start asks a VM to start (PUT virtualmachines/NAME/start).
func (c *Client) Start(ctx context.Context, namespace, name string, opts virtv1.StartOptions) error {
	return c.put(ctx, "virtualmachines", namespace, name, "start", opts)
}

// Stop asks a VM to stop (PUT virtualmachines/NAME/stop).
func (c *Client) Stop(ctx context.Context, namespace, name string, opts virtv1.StopOptions) error {
	return c.put(ctx, "virtualmachines", namespace, name, "stop", opts)
}

// Restart asks a VM to restart (PUT virtualmachines/NAME/restart).
func (c *Client) Restart(ctx context.Context, namespace, name string, opts virtv1.RestartOptions) error {
	return c.put(ctx, "virtualmachines", namespace, name, "restart", opts)
}

// Migrate asks for a live migration of a VM's VMI (PUT virtualmachines/NAME/migrate).
func (c *Client) Migrate(ctx context.Context, namespace, name string, opts virtv1.MigrateOptions) error {
	return c.put(ctx, "virtualmachines", namespace, name, "migrate", opts)
}

// EvacuateCancel clears the evacuation mark a drain left on a VM's VMI
// (PUT virtualmachines/NAME/evacuatecancel).
func (c *Client) EvacuateCancel(ctx context.Context, namespace, name string, opts virtv1.EvacuateCancelOptions) error {
	return c.put(ctx, "virtualmachines", namespace, name, "evacuatecancel", opts)
}

// EvacuateCancelVMI is EvacuateCancel on a VMI
// (PUT virtualmachineinstances/NAME/evacuatecancel).
func (c *Client) EvacuateCancelVMI(ctx context.Context, namespace, name string, opts virtv1.EvacuateCancelOptions) error {
	return c.put(ctx, "virtualmachineinstances", namespace, name, "evacuatecancel", opts)
}

// Pause pauses a VMI (PUT virtualmachineinstances/NAME/pause).
func (c *Client) Pause(ctx context.Context, namespace, name string, opts virtv1.PauseOptions) error {
	return c.put(ctx, "virtualmachineinstances", namespace, name, "pause", opts)
}

// Unpause unpauses a VMI (PUT virtualmachineinstances/NAME/unpause).
func (c *Client) Unpause(ctx context.Context, namespace, name string, opts virtv1.UnpauseOptions) error {
	return c.put(ctx, "virtualmachineinstances", namespace, name, "unpause", opts)
}

// Reset presses a VMI's reset button (PUT virtualmachineinstances/NAME/reset).
func (c *Client) Reset(ctx context.Context, namespace, name string) error {
	return c.put(ctx, "virtualmachineinstances", namespace, name, "reset", struct{}{})
}

// SoftReboot asks a VMI's guest to reboot (PUT virtualmachineinstances/NAME/softreboot).
func (c *Client) SoftReboot(ctx context.Context, namespace, name string) error {
	return c.put(ctx, "virtualmachineinstances", namespace, name, "softreboot", struct{}{})
}

// AddVolume hotplugs a volume into a VM (and its running VMI).
func (c *Client) AddVolume(ctx context.Context, namespace, name string, opts virtv1.AddVolumeOptions) error {
	return c.put(ctx, "virtualmachines", namespace, name, "addvolume", opts)
}

// RemoveVolume unplugs a hotplugged volume from a VM (and its running VMI).
func (c *Client) RemoveVolume(ctx context.Context, namespace, name string, opts virtv1.RemoveVolumeOptions) error {
	return c.put(ctx, "virtualmachines", namespace, name, "removevolume", opts)
}

// AddVMIVolume hotplugs a volume into a running VMI only
// (PUT virtualmachineinstances/NAME/addvolume): the VM's template is left
// alone, so the volume is gone after a restart.
func (c *Client) AddVMIVolume(ctx context.Context, namespace, name string, opts virtv1.AddVolumeOptions) error {
	return c.put(ctx, "virtualmachineinstances", namespace, name, "addvolume", opts)
}

// RemoveVMIVolume unplugs a hotplugged volume from a running VMI only
// (PUT virtualmachineinstances/NAME/removevolume).
func (c *Client) RemoveVMIVolume(ctx context.Context, namespace, name string, opts virtv1.RemoveVolumeOptions) error {
	return c.put(ctx, "virtualmachineinstances", namespace, name, "removevolume", opts)
}

// Version returns virt-api's version (GET .../v1/version).
func (c *Client) Version(ctx context.Context) (VersionInfo, error) {
	var v VersionInfo
	b, err := c.do(ctx, http.MethodGet, strings.TrimSuffix(c.cfg.Host, "/")+Prefix+"/version", nil, "version", 64<<10)
	if err != nil {
		return v, err
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return v, fmt.Errorf("version: decoding the answer: %w", err)
	}
	return v, nil
}

// ExpandSpec returns the stored VM with its instancetype and preference
// written into its template (GET virtualmachines/NAME/expand-spec).
func (c *Client) ExpandSpec(ctx context.Context, namespace, name string) (*virtv1.VirtualMachine, error) {
	return c.expand(ctx, http.MethodGet, c.url("virtualmachines", namespace, name, "expand-spec"), nil)
}

// ExpandVMSpec returns vm with its instancetype and preference written into
// its template (PUT namespaces/NAMESPACE/expand-vm-spec); vm is not stored.
func (c *Client) ExpandVMSpec(ctx context.Context, namespace string, vm *virtv1.VirtualMachine) (*virtv1.VirtualMachine, error) {
	b, err := json.Marshal(vm)
	if err != nil {
		return nil, err
	}
	u := strings.TrimSuffix(c.cfg.Host, "/") + Prefix + "/namespaces/" + url.PathEscape(namespace) + "/" + ExpandVMSpecResource
	return c.expand(ctx, http.MethodPut, u, b)
}

func (c *Client) expand(ctx context.Context, method, u string, body []byte) (*virtv1.VirtualMachine, error) {
	b, err := c.do(ctx, method, u, body, "expand", maxVMBody)
	if err != nil {
		return nil, err
	}
	vm := &virtv1.VirtualMachine{}
	if err := json.Unmarshal(b, vm); err != nil {
		return nil, fmt.Errorf("expand: decoding the answer: %w", err)
	}
	return vm, nil
}

// Console opens a VMI's serial console: reads are what the guest prints
// from now on, writes are typed into it. Close ends the session.
func (c *Client) Console(ctx context.Context, namespace, name string) (io.ReadWriteCloser, error) {
	return c.stream(ctx, namespace, name, "console")
}

// VNC opens a VMI's VNC server as a byte stream (RFB).
func (c *Client) VNC(ctx context.Context, namespace, name string) (io.ReadWriteCloser, error) {
	return c.stream(ctx, namespace, name, "vnc")
}

// Screenshot returns a VMI's display as a PNG (GET
// virtualmachineinstances/NAME/vnc/screenshot).
func (c *Client) Screenshot(ctx context.Context, namespace, name string) ([]byte, error) {
	return c.do(ctx, http.MethodGet, c.url("virtualmachineinstances", namespace, name, "vnc/screenshot"), nil,
		"screenshot "+namespace+"/"+name, nodeapi.MaxScreenshotBytes)
}

// GuestOSInfo is what a VMI's guest agent says (GET
// virtualmachineinstances/NAME/guestosinfo).
func (c *Client) GuestOSInfo(ctx context.Context, namespace, name string) (virtv1.VirtualMachineInstanceGuestAgentInfo, error) {
	var v virtv1.VirtualMachineInstanceGuestAgentInfo
	return v, c.getJSON(ctx, namespace, name, "guestosinfo", &v)
}

// UserList is a VMI's guest's logged-in users (GET .../userlist).
func (c *Client) UserList(ctx context.Context, namespace, name string) (virtv1.VirtualMachineInstanceGuestOSUserList, error) {
	var v virtv1.VirtualMachineInstanceGuestOSUserList
	return v, c.getJSON(ctx, namespace, name, "userlist", &v)
}

// FilesystemList is a VMI's guest's file systems (GET .../filesystemlist).
func (c *Client) FilesystemList(ctx context.Context, namespace, name string) (virtv1.VirtualMachineInstanceFileSystemList, error) {
	var v virtv1.VirtualMachineInstanceFileSystemList
	return v, c.getJSON(ctx, namespace, name, "filesystemlist", &v)
}

// Freeze freezes a VMI's guest's file systems until Unfreeze or
// unfreezeTimeout (PUT .../freeze).
func (c *Client) Freeze(ctx context.Context, namespace, name string, unfreezeTimeout time.Duration) error {
	return c.put(ctx, "virtualmachineinstances", namespace, name, "freeze", virtv1.FreezeUnfreezeTimeout{UnfreezeTimeout: &metav1.Duration{Duration: unfreezeTimeout}})
}

// Unfreeze thaws a VMI's guest's file systems (PUT .../unfreeze).
func (c *Client) Unfreeze(ctx context.Context, namespace, name string) error {
	return c.put(ctx, "virtualmachineinstances", namespace, name, "unfreeze", struct{}{})
}

// maxAgentBody bounds the answer of an agent verb.
const maxAgentBody = 4 << 20

func (c *Client) getJSON(ctx context.Context, namespace, name, verb string, out any) error {
	what := verb + " " + namespace + "/" + name
	b, err := c.do(ctx, http.MethodGet, c.url("virtualmachineinstances", namespace, name, verb), nil, what, maxAgentBody)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s: decoding the answer: %w", what, err)
	}
	return nil
}

// PortForward opens a stream to port of a VMI's (resource
// "virtualmachineinstances") or a VM's ("virtualmachines") guest, protocol
// "tcp" or "udp": reads are what the guest sends, writes reach it. Close
// ends the stream.
func (c *Client) PortForward(ctx context.Context, resource, namespace, name string, port int, protocol string) (io.ReadWriteCloser, error) {
	return c.streamOf(ctx, resource, namespace, name, fmt.Sprintf("portforward/%d/%s", port, url.PathEscape(protocol)))
}

func (c *Client) url(resource, namespace, name, verb string) string {
	return strings.TrimSuffix(c.cfg.Host, "/") + Prefix + "/namespaces/" + url.PathEscape(namespace) + "/" +
		resource + "/" + url.PathEscape(name) + "/" + verb
}

func (c *Client) put(ctx context.Context, resource, namespace, name, verb string, body any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	_, err = c.do(ctx, http.MethodPut, c.url(resource, namespace, name, verb), b, verb+" "+namespace+"/"+name, 64<<10)
	return err
}

// do sends one request (a JSON body when body is not nil) and returns the
// answer's body, at most limit bytes (a longer one is an error naming
// what), or the Status of an answer that is not 2xx.
func (c *Client) do(ctx context.Context, method, u string, body []byte, what string, limit int64) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return nil, statusFrom(resp)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: the answer is larger than %d bytes", what, limit)
	}
	return b, nil
}

func (c *Client) stream(ctx context.Context, namespace, name, verb string) (io.ReadWriteCloser, error) {
	return c.streamOf(ctx, "virtualmachineinstances", namespace, name, verb)
}

func (c *Client) streamOf(ctx context.Context, resource, namespace, name, verb string) (io.ReadWriteCloser, error) {
	tlsCfg, err := rest.TLSConfigFor(c.cfg)
	if err != nil {
		return nil, err
	}
	d := wsstream.Dialer()
	d.TLSClientConfig = tlsCfg
	hdr := http.Header{}
	if c.cfg.BearerToken != "" {
		hdr.Set("Authorization", "Bearer "+c.cfg.BearerToken)
	}
	u := strings.Replace(c.url(resource, namespace, name, verb), "https://", "wss://", 1)
	ws, resp, err := d.DialContext(ctx, u, hdr)
	if err != nil {
		if resp != nil && resp.StatusCode >= 300 {
			defer resp.Body.Close()
			return nil, statusFrom(resp)
		}
		return nil, fmt.Errorf("%s %s/%s: %w", verb, namespace, name, err)
	}
	return wsstream.New(ws), nil
}

func statusFrom(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	st := metav1.Status{}
	if json.Unmarshal(b, &st) != nil || st.Code == 0 {
		st = metav1.Status{Code: int32(resp.StatusCode), Message: fmt.Sprintf("%s: %s", resp.Status, strings.TrimSpace(string(b)))}
	}
	return &StatusError{Status: st}
}
