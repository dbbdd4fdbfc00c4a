package nodeapi_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/virtkit/virtkit/virtapi/nodeapi"
)

// contract is what every Ops must do, given a node (fake) where "ns/running"
// runs, "ns/novnc" runs without a graphics device and "ns/cutoff" cannot be
// reached.
func contract(t *testing.T, ops nodeapi.Ops) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// Each step runs in order on the same VMI: the state carries over.
	steps := []struct {
		name string
		call func() error
		want error // the sentinel, or nil
	}{
		{"pause of a VMI not on this node", func() error { return ops.Pause(ctx, "ns", "absent") }, nodeapi.ErrNotFound},
		{"unpause of a running guest", func() error { return ops.Unpause(ctx, "ns", "running") }, nodeapi.ErrConflict},
		{"pause", func() error { return ops.Pause(ctx, "ns", "running") }, nil},
		{"pause again", func() error { return ops.Pause(ctx, "ns", "running") }, nodeapi.ErrConflict},
		{"soft reboot while paused", func() error { return ops.SoftReboot(ctx, "ns", "running") }, nodeapi.ErrConflict},
		{"unpause", func() error { return ops.Unpause(ctx, "ns", "running") }, nil},
		{"soft reboot", func() error { return ops.SoftReboot(ctx, "ns", "running") }, nil},
		{"reset", func() error { return ops.Reset(ctx, "ns", "running") }, nil},
		{"reset of a VMI not on this node", func() error { return ops.Reset(ctx, "ns", "absent") }, nodeapi.ErrNotFound},
		{"pause of an unreachable VMI", func() error { return ops.Pause(ctx, "ns", "cutoff") }, nodeapi.ErrUnavailable},
		{"console of a VMI not on this node", func() error { return closed(ops.Console(ctx, "ns", "absent")) }, nodeapi.ErrNotFound},
		{"VNC without a graphics device", func() error { return closed(ops.VNC(ctx, "ns", "novnc")) }, nodeapi.ErrUnavailable},
		{"console of an unreachable VMI", func() error { return closed(ops.Console(ctx, "ns", "cutoff")) }, nodeapi.ErrUnavailable},
		{"screenshot without a graphics device", func() error { _, err := ops.Screenshot(ctx, "ns", "novnc"); return err }, nodeapi.ErrUnavailable},
		{"screenshot of a VMI not on this node", func() error { _, err := ops.Screenshot(ctx, "ns", "absent"); return err }, nodeapi.ErrNotFound},
		{"guestosinfo without an agent", func() error { _, err := ops.GuestOSInfo(ctx, "ns", "noagent"); return err }, nodeapi.ErrUnavailable},
		{"userlist without an agent", func() error { _, err := ops.UserList(ctx, "ns", "noagent"); return err }, nodeapi.ErrUnavailable},
		{"filesystemlist of a VMI not on this node", func() error { _, err := ops.FilesystemList(ctx, "ns", "absent"); return err }, nodeapi.ErrNotFound},
		{"freeze without an agent", func() error { return ops.Freeze(ctx, "ns", "noagent", time.Minute) }, nodeapi.ErrUnavailable},
		{"freeze", func() error { return ops.Freeze(ctx, "ns", "running", 90*time.Second) }, nil},
		{"freeze again", func() error { return ops.Freeze(ctx, "ns", "running", 90*time.Second) }, nil},
		{"unfreeze", func() error { return ops.Unfreeze(ctx, "ns", "running") }, nil},
		{"unfreeze of a thawed guest", func() error { return ops.Unfreeze(ctx, "ns", "running") }, nil},
	}
	for _, s := range steps {
		err := s.call()
		if diff := cmp.Diff(sentinel(s.want), sentinel(err)); diff != "" {
			t.Errorf("%s: error %v (-want +got):\n%s", s.name, err, diff)
		}
		if err != nil && !strings.Contains(err.Error(), "ns/") {
			t.Errorf("%s: error %q does not name the VMI", s.name, err)
		}
	}

	t.Run("the agent's verbs answer KubeVirt's types", func(t *testing.T) {
		info, err := ops.GuestOSInfo(ctx, "ns", "running")
		if err != nil || info.OS.Name != nodeapi.FakeOS || info.GAVersion == "" {
			t.Errorf("GuestOSInfo = %+v, %v", info, err)
		}
		users, err := ops.UserList(ctx, "ns", "running")
		if err != nil || users.Items == nil {
			t.Errorf("UserList = %+v, %v; want a list, empty or not", users, err)
		}
		fss, err := ops.FilesystemList(ctx, "ns", "running")
		if err != nil || len(fss.Items) == 0 || fss.Items[0].MountPoint != "/" {
			t.Errorf("FilesystemList = %+v, %v", fss, err)
		}
	})

	t.Run("screenshot is a PNG", func(t *testing.T) {
		b, err := ops.Screenshot(ctx, "ns", "running")
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("decoding %d bytes as PNG: %v", len(b), err)
		}
		if r := img.Bounds(); r.Dx() != nodeapi.FakeScreenWidth || r.Dy() != nodeapi.FakeScreenHeight {
			t.Errorf("screenshot of %v, want %dx%d", r, nodeapi.FakeScreenWidth, nodeapi.FakeScreenHeight)
		}
	})

	for _, open := range []struct {
		name string
		fn   func(context.Context, string, string) (io.ReadWriteCloser, error)
	}{{"console", ops.Console}, {"vnc", ops.VNC}} {
		t.Run(open.name+" echoes bytes both ways", func(t *testing.T) {
			s, err := open.fn(ctx, "ns", "running")
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for _, msg := range []string{"hello\r\n", "\x00\x01binary\xff", strings.Repeat("x", 40000)} {
				if _, err := s.Write([]byte(msg)); err != nil {
					t.Fatal(err)
				}
				got := make([]byte, len(msg))
				if _, err := io.ReadFull(s, got); err != nil {
					t.Fatalf("reading back %d bytes: %v", len(msg), err)
				}
				if string(got) != msg {
					t.Errorf("read back %q, want %q", abbrev(got), abbrev([]byte(msg)))
				}
			}
		})
	}
}

func closed(s io.ReadWriteCloser, err error) error {
	if s != nil {
		s.Close()
	}
	return err
}

// sentinel names the nodeapi sentinel err wraps, for diffs.
func sentinel(err error) string {
	for _, s := range []error{nodeapi.ErrNotFound, nodeapi.ErrConflict, nodeapi.ErrUnavailable} {
		if errors.Is(err, s) {
			return s.Error()
		}
	}
	if err != nil {
		return "other: " + err.Error()
	}
	return ""
}

func abbrev(b []byte) string {
	if len(b) > 20 {
		return string(b[:20]) + "..."
	}
	return string(b)
}

func node() *nodeapi.Fake {
	f := nodeapi.NewFake()
	f.Set("ns", "running", nodeapi.FakeVMI{})
	f.Set("ns", "novnc", nodeapi.FakeVMI{NoVNC: true})
	f.Set("ns", "cutoff", nodeapi.FakeVMI{Unavailable: true})
	f.Set("ns", "noagent", nodeapi.FakeVMI{NoAgent: true})
	return f
}

func TestContractFake(t *testing.T) {
	f := node()
	contract(t, f)
	st, _ := f.State("ns", "running")
	if diff := cmp.Diff(nodeapi.FakeVMI{SoftReboots: 1, Resets: 1, UnfreezeTimeout: 90 * time.Second}, st); diff != "" {
		t.Errorf("state after the contract (-want +got):\n%s", diff)
	}
}

// The same contract through the wire: Client -> TLS -> Server -> Fake.
func TestContractClientServer(t *testing.T) {
	f := node()
	srv := httptest.NewTLSServer(nodeapi.NewServer(f))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	loc := nodeapi.StaticLocator{"node-a": {URL: u, TLS: serverTLS(srv)}}
	ep, err := loc.Locate(context.Background(), "node-a")
	if err != nil {
		t.Fatal(err)
	}
	contract(t, nodeapi.NewClient(ep))
	st, _ := f.State("ns", "running")
	if diff := cmp.Diff(nodeapi.FakeVMI{SoftReboots: 1, Resets: 1, UnfreezeTimeout: 90 * time.Second}, st); diff != "" {
		t.Errorf("state after the contract (-want +got):\n%s", diff)
	}
}

func TestStaticLocatorUnknownNode(t *testing.T) {
	_, err := nodeapi.StaticLocator{}.Locate(context.Background(), "nowhere")
	if !errors.Is(err, nodeapi.ErrUnavailable) || !strings.Contains(err.Error(), "nowhere") {
		t.Errorf("got %v, want ErrUnavailable naming the node", err)
	}
}

// serverTLS is a client TLS configuration that trusts srv's certificate.
func serverTLS(srv *httptest.Server) *tls.Config {
	return srv.Client().Transport.(*http.Transport).TLSClientConfig
}
