package subresources_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"io"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/virtkit/virtkit/internal/scheme"
	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/internal/wsstream"
	"github.com/virtkit/virtkit/virtapi/nodeapi"
	"github.com/virtkit/virtkit/virtapi/subresources"
)

// echoGuest is a TCP server on 127.0.0.1 that echoes every connection, the
// guest port of the tests; it returns the port.
func echoGuest(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	testenv.Serve(t, ln, func(c net.Conn) { _, _ = io.Copy(c, c) })
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// guestAt gives vmi the pod address ip, as the handler reports it.
func guestAt(vmi *virtv1.VirtualMachineInstance, ip string) *virtv1.VirtualMachineInstance {
	vmi.Status.Interfaces = []virtv1.VirtualMachineInstanceNetworkInterface{{Name: "default", IP: ip, IPs: []string{ip}}}
	return vmi
}

func ownedBy(vmi *virtv1.VirtualMachineInstance, vm *virtv1.VirtualMachine) *virtv1.VirtualMachineInstance {
	vmi.OwnerReferences = []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine", Name: vm.Name, UID: vm.UID, Controller: ptr.To(true)}}
	return vmi
}

func TestPortForwardEchoes(t *testing.T) {
	port := echoGuest(t)
	vm := vmObj(virtv1.RunStrategyAlways)
	vm.UID = "vm-uid"
	vm.Status.Created = true
	h, _ := fakeAPI(t, nodeapi.NewFake(), vm, ownedBy(guestAt(vmiObj(virtv1.Running), "127.0.0.1"), vm))
	srv := httptest.NewServer(h)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, path := range []string{
		"/namespaces/ns/virtualmachineinstances/vm/portforward/" + port,
		"/namespaces/ns/virtualmachineinstances/vm/portforward/" + port + "/tcp",
		"/namespaces/ns/virtualmachines/vm/portforward/" + port,
	} {
		t.Run(path, func(t *testing.T) {
			ws, _, err := wsstream.Dialer().DialContext(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+subresources.Prefix+path, nil)
			must(t, err)
			s := wsstream.New(ws)
			defer s.Close()
			msg := "GET / HTTP/1.0\r\n\r\n\x00\xff"
			_, err = s.Write([]byte(msg))
			must(t, err)
			got := make([]byte, len(msg))
			_, err = io.ReadFull(s, got)
			must(t, err)
			if string(got) != msg {
				t.Errorf("echo %q, want %q", got, msg)
			}
		})
	}
}

func TestPortForwardRefusals(t *testing.T) {
	port := echoGuest(t)
	paused := []virtv1.VirtualMachineInstanceCondition{{Type: virtv1.VirtualMachineInstancePaused, Status: corev1.ConditionTrue}}
	notCreated := vmObj(virtv1.RunStrategyHalted)
	cases := []struct {
		name string
		objs []virtv1.VirtualMachineInstance
		vm   *virtv1.VirtualMachine
		path string
		code int
		msg  string
	}{
		{"no port", nil, nil, "virtualmachineinstances/vm/portforward", 400, "port must not be empty"},
		{"a port that is not a number", nil, nil, "virtualmachineinstances/vm/portforward/http", 400, `port "http": must be a number from 1 to 65535`},
		{"port zero", nil, nil, "virtualmachineinstances/vm/portforward/0", 400, "from 1 to 65535"},
		{"a port past 65535", nil, nil, "virtualmachineinstances/vm/portforward/65536", 400, "from 1 to 65535"},
		{"an unknown protocol", nil, nil, "virtualmachineinstances/vm/portforward/" + port + "/sctp", 400, `protocol "sctp": must be tcp or udp`},
		{"too many segments", nil, nil, "virtualmachineinstances/vm/portforward/" + port + "/tcp/x", 400, "PORT[/PROTOCOL]"},
		{"a paused VMI", []virtv1.VirtualMachineInstance{*withConds(guestAt(vmiObj(virtv1.Running), "127.0.0.1"), paused)}, nil,
			"virtualmachineinstances/vm/portforward/" + port, 409, "VMI is paused"},
		{"a VMI without addresses", []virtv1.VirtualMachineInstance{*vmiObj(virtv1.Running)}, nil,
			"virtualmachineinstances/vm/portforward/" + port, 400, "no network interfaces are present"},
		{"a scheduling VMI", []virtv1.VirtualMachineInstance{*guestAt(vmiObj(virtv1.Scheduling), "127.0.0.1")}, nil,
			"virtualmachineinstances/vm/portforward/" + port, 409, "phase is Scheduling"},
		{"a VM that has no VMI", nil, notCreated, "virtualmachines/vm/portforward/" + port, 409, "VMI is not started"},
		{"a missing VMI", nil, nil, "virtualmachineinstances/gone/portforward/" + port, 404, `"gone" not found`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			objs := []client.Object{}
			vmis := c.objs
			if vmis == nil {
				vmis = []virtv1.VirtualMachineInstance{*guestAt(vmiObj(virtv1.Running), "127.0.0.1")}
			}
			for i := range vmis {
				objs = append(objs, &vmis[i])
			}
			if c.vm != nil {
				objs = []client.Object{c.vm}
			}
			h, _ := fakeAPI(t, nodeapi.NewFake(), objs...)
			rec := serve(h, "GET", subresources.Prefix+"/namespaces/ns/"+c.path, "")
			var st metav1.Status
			if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
				t.Fatalf("%d: body %q is not a Status: %v", rec.Code, rec.Body, err)
			}
			if rec.Code != c.code || !strings.Contains(st.Message, c.msg) {
				t.Errorf("%d %q, want %d %q", rec.Code, st.Message, c.code, c.msg)
			}
		})
	}
}

func TestScreenshot(t *testing.T) {
	noGraphics := vmiObj(virtv1.Running)
	noGraphics.Spec.Domain.Devices.AutoattachGraphicsDevice = ptr.To(false)
	cases := []struct {
		name string
		vmi  *virtv1.VirtualMachineInstance
		node nodeapi.FakeVMI
		code int
		msg  string
	}{
		{"a running VMI", vmiObj(virtv1.Running), nodeapi.FakeVMI{}, 200, ""},
		{"a VMI without graphics", noGraphics, nodeapi.FakeVMI{}, 400, "No graphics devices are present."},
		{"a scheduled VMI", vmiObj(virtv1.Scheduled), nodeapi.FakeVMI{}, 400, "phase is Scheduled"},
		{"a guest the node has no display of", vmiObj(virtv1.Running), nodeapi.FakeVMI{NoVNC: true}, 503, "no graphics device"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			node := nodeapi.NewFake()
			node.Set("ns", "vm", c.node)
			h, _ := fakeAPI(t, node, c.vmi)
			rec := serve(h, "GET", subresources.Prefix+"/namespaces/ns/virtualmachineinstances/vm/vnc/screenshot?moveCursor=true", "")
			if rec.Code != c.code || !strings.Contains(rec.Body.String(), c.msg) {
				t.Fatalf("%d %.200q, want %d %q", rec.Code, rec.Body, c.code, c.msg)
			}
			if c.code != 200 {
				return
			}
			if ct := rec.Header().Get("Content-Type"); ct != "image/png" {
				t.Errorf("Content-Type %q, want image/png", ct)
			}
			if _, err := png.Decode(bytes.NewReader(rec.Body.Bytes())); err != nil {
				t.Errorf("body is not a PNG: %v", err)
			}
		})
	}
}

// TestSubresourceAttributes: RBAC sees portforward without its port and
// protocol, and vnc/screenshot whole, as KubeVirt's authorizer asks.
func TestSubresourceAttributes(t *testing.T) {
	authz := &recordingAuthz{}
	h := subresources.New(fake.NewClientBuilder().WithScheme(scheme.New()).Build(),
		subresources.WithAuthenticator(anyone{}), subresources.WithAuthorizer(authz))
	for _, p := range []string{"virtualmachineinstances/vm/portforward/22/tcp", "virtualmachines/vm/portforward/80", "virtualmachineinstances/vm/vnc/screenshot"} {
		if rec := serve(h, "GET", subresources.Prefix+"/namespaces/ns/"+p, ""); rec.Code != 404 {
			t.Errorf("%s: %d %s, want 404 (no such object)", p, rec.Code, rec.Body)
		}
	}
	want := []subresources.Attributes{
		{Namespace: "ns", Name: "vm", Verb: "get", Resource: "virtualmachineinstances", Subresource: "portforward"},
		{Namespace: "ns", Name: "vm", Verb: "get", Resource: "virtualmachines", Subresource: "portforward"},
		{Namespace: "ns", Name: "vm", Verb: "get", Resource: "virtualmachineinstances", Subresource: "vnc/screenshot"},
	}
	if diff := cmp.Diff(want, authz.asked); diff != "" {
		t.Errorf("authorizer asked (-want +got):\n%s", diff)
	}
}
