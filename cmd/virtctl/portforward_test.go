package main

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/png"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestParsePortForwardArguments(t *testing.T) {
	for _, c := range []struct {
		arg  string
		want forwardTarget
		err  string
	}{
		{"vm/tiny", forwardTarget{resource: "virtualmachines", kind: kindVM, name: "tiny"}, ""},
		{"VMI/tiny/lab", forwardTarget{resource: "virtualmachineinstances", kind: kindVMI, name: "tiny", namespace: "lab"}, ""},
		{"virtualmachines/a.b", forwardTarget{resource: "virtualmachines", kind: kindVM, name: "a.b"}, ""},
		{"tiny", forwardTarget{}, "want TYPE/NAME"},
		{"pod/tiny", forwardTarget{}, `unsupported resource type "pod"`},
		{"vm/", forwardTarget{}, "the name is empty"},
		{"vm/tiny/", forwardTarget{}, "the namespace is empty"},
		{"vm/a/b/c", forwardTarget{}, "want TYPE/NAME"},
	} {
		got, err := parseForwardTarget(c.arg)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("parseForwardTarget(%q) = %v, want an error with %q", c.arg, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("parseForwardTarget(%q) = %+v, %v; want %+v", c.arg, got, err, c.want)
		}
	}
	for _, c := range []struct {
		arg  string
		want forwardedPort
		err  string
	}{
		{"8080", forwardedPort{"tcp", 8080, 8080}, ""},
		{"8080:80", forwardedPort{"tcp", 8080, 80}, ""},
		{"udp/5353:53", forwardedPort{"udp", 5353, 53}, ""},
		{"TCP/0:22", forwardedPort{"tcp", 0, 22}, ""},
		{"0", forwardedPort{}, "say which remote port"},
		{"sctp/80", forwardedPort{}, `protocol "sctp"`},
		{"http", forwardedPort{}, `the local port "http"`},
		{"80:70000", forwardedPort{}, `the remote port "70000"`},
		{"80:0", forwardedPort{}, `the remote port "0"`},
	} {
		got, err := parseForwardedPort(c.arg)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("parseForwardedPort(%q) = %v, want an error with %q", c.arg, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("parseForwardedPort(%q) = %+v, %v; want %+v", c.arg, got, err, c.want)
		}
	}
}

// TestPortForwardListens: a local TCP connection reaches the guest's port
// through a PortForward stream of its own.
func TestPortForwardListens(t *testing.T) {
	h := newHarness(t, "lab")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"port-forward", "vm/tiny/other", "0:80"}, h.deps()) }()
	re := regexp.MustCompile(`Forwarding from (127\.0\.0\.1:\d+) -> 80 \(tcp\)`)
	var addr string
	for deadline := time.Now().Add(10 * time.Second); addr == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m := re.FindStringSubmatch(h.stdout.String()); m != nil {
			addr = m[1]
		}
	}
	if addr == "" {
		cancel()
		t.Fatalf("no Forwarding line; stdout %q stderr %q", h.stdout, h.stderr)
	}
	for i := 0; i < 2; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write([]byte("hello")); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, 5)
		if _, err := io.ReadFull(c, got); err != nil || string(got) != "hello" {
			t.Errorf("echo %q, %v", got, err)
		}
		c.Close()
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d, stderr %q", code, h.stderr)
	}
	want := []call{
		{"PortForward", "other", "tiny", forwardCall{"virtualmachines", 80, "tcp"}},
		{"PortForward", "other", "tiny", forwardCall{"virtualmachines", 80, "tcp"}},
	}
	if d := cmp.Diff(want, h.api.recorded()); d != "" {
		t.Errorf("calls (-want +got):\n%s", d)
	}
}

func TestPortForwardStdio(t *testing.T) {
	h := newHarness(t, "lab")
	h.stdin = strings.NewReader("SSH-2.0-test\r\n")
	// The guest answers once and closes, as a server refusing would.
	h.api.forward = func() (io.ReadWriteCloser, error) {
		a, b := net.Pipe()
		go func() {
			buf := make([]byte, 14)
			_, _ = io.ReadFull(b, buf)
			_, _ = b.Write(append([]byte("got "), buf...))
			b.Close()
		}()
		return a, nil
	}
	if code := h.run("port-forward", "--stdio=true", "vmi/tiny", "22"); code != 0 {
		t.Fatalf("exit %d, stderr %q", code, h.stderr)
	}
	if got := h.stdout.String(); got != "got SSH-2.0-test\r\n" {
		t.Errorf("stdout %q", got)
	}
	if code := h.run("port-forward", "--stdio=true", "vmi/tiny", "22", "23"); code == 0 || !strings.Contains(h.stderr.String(), "--stdio forwards exactly one port") {
		t.Errorf("two ports with --stdio: exit %d, stderr %q", code, h.stderr)
	}
}

func TestVNCScreenshot(t *testing.T) {
	var b bytes.Buffer
	if err := png.Encode(&b, image1x1()); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, "lab")
	h.api.screenshot = b.Bytes()
	file := filepath.Join(t.TempDir(), "shot.png")
	if code := h.run("vnc", "screenshot", "tiny", "-f", file); code != 0 {
		t.Fatalf("exit %d, stderr %q", code, h.stderr)
	}
	if got, err := os.ReadFile(file); err != nil || !bytes.Equal(got, b.Bytes()) {
		t.Errorf("file: %d bytes, %v; want the PNG", len(got), err)
	}
	if code := h.run("vnc", "screenshot", "tiny", "--file=-"); code != 0 || h.stdout.String() != b.String() {
		t.Errorf("to stdout: exit %d, %d bytes", code, len(h.stdout.String()))
	}
	if code := h.run("vnc", "screenshot", "tiny"); code == 0 || !strings.Contains(h.stderr.String(), "--file is required") {
		t.Errorf("without --file: exit %d, stderr %q", code, h.stderr)
	}
	want := []call{{"Screenshot", "lab", "tiny", nil}, {"Screenshot", "lab", "tiny", nil}}
	if d := cmp.Diff(want, h.api.recorded()); d != "" {
		t.Errorf("calls (-want +got):\n%s", d)
	}
}

func TestExpose(t *testing.T) {
	vm := &virtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "lab", Name: "tiny", UID: "vm-uid"},
		Spec: virtv1.VirtualMachineSpec{Template: &virtv1.VirtualMachineInstanceTemplateSpec{Spec: virtv1.VirtualMachineInstanceSpec{
			Networks: []virtv1.Network{{Name: "default", NetworkSource: virtv1.NetworkSource{Pod: &virtv1.PodNetwork{}}}},
			Domain: virtv1.DomainSpec{Devices: virtv1.Devices{Interfaces: []virtv1.Interface{{Name: "default",
				Ports: []virtv1.Port{{Port: 80}, {Port: 53, Protocol: "UDP"}}}}}},
		}}}}
	rs := &virtv1.VirtualMachineInstanceReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "lab", Name: "web", UID: "rs-uid"},
		Spec: virtv1.VirtualMachineInstanceReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	h := newHarness(t, "lab", vm, rs)
	if code := h.run("expose", "vm", "tiny", "--name=tiny-http"); code != 0 {
		t.Fatalf("exit %d, stderr %q", code, h.stderr)
	}
	if !strings.Contains(h.stdout.String(), "Service tiny-http successfully created for vm tiny") {
		t.Errorf("stdout %q", h.stdout)
	}
	svc := &corev1.Service{}
	if err := h.kube.Get(context.Background(), client.ObjectKey{Namespace: "lab", Name: "tiny-http"}, svc); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP,
		Selector: map[string]string{"vmi.kubevirt.io/id": "tiny"},
		Ports:    []corev1.ServicePort{{Name: "port-1", Protocol: "TCP", Port: 80}, {Name: "port-2", Protocol: "UDP", Port: 53}},
	}, svc.Spec); d != "" {
		t.Errorf("Service spec (-want +got):\n%s", d)
	}
	if ref := metav1.GetControllerOf(svc); ref == nil || ref.UID != "vm-uid" || ref.Kind != "VirtualMachine" {
		t.Errorf("owner %+v, want the VM", ref)
	}

	if code := h.run("expose", "vmirs", "web", "--name=web", "--port=80", "--target-port=8080", "--type=NodePort"); code != 0 {
		t.Fatalf("exit %d, stderr %q", code, h.stderr)
	}
	if err := h.kube.Get(context.Background(), client.ObjectKey{Namespace: "lab", Name: "web"}, svc); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Selector: map[string]string{"app": "web"},
		Ports: []corev1.ServicePort{{Protocol: "TCP", Port: 80, TargetPort: intstr.FromInt32(8080)}},
	}, svc.Spec); d != "" {
		t.Errorf("Service spec (-want +got):\n%s", d)
	}

	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"expose", "vm", "tiny"}, "--name is required"},
		{[]string{"expose", "vm", "tiny", "--name=x", "--type=ExternalName"}, `--type "ExternalName"`},
		{[]string{"expose", "pod", "tiny", "--name=x"}, `unsupported resource type "pod"`},
		{[]string{"expose", "vmi", "gone", "--name=x", "--port=22"}, "reading VirtualMachineInstance lab/gone"},
		{[]string{"expose", "vm", "tiny", "--name=x", "--port=22", "--protocol=SCTP"}, `--protocol "SCTP"`},
	} {
		h.stderr = &syncBuffer{}
		if code := h.run(c.args...); code == 0 || !strings.Contains(h.stderr.String(), c.msg) {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, code, h.stderr, c.msg)
		}
	}
}

func image1x1() *image.Gray { return image.NewGray(image.Rect(0, 0, 1, 1)) }

func TestGuestAgentCommands(t *testing.T) {
	h := newHarness(t, "lab")
	for _, c := range []struct{ cmd, has string }{
		{"guestosinfo", `"guestAgentVersion": "7.2"`},
		{"userlist", `"userName": "root"`},
		{"fslist", `"mountPoint": "/"`},
	} {
		h.stdout = &syncBuffer{}
		if code := h.run(c.cmd, "tiny"); code != 0 || !strings.Contains(h.stdout.String(), c.has) {
			t.Errorf("%s: exit %d, stdout %q, want %q", c.cmd, code, h.stdout, c.has)
		}
	}
	h.api.errs["UserList"] = errors.New("VMI does not have guest agent connected")
	if code := h.run("userlist", "tiny"); code == 0 || !strings.Contains(h.stderr.String(), "guest agent") {
		t.Errorf("refused userlist: exit %d, stderr %q", code, h.stderr)
	}
}
