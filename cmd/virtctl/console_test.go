package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/virtapi/nodeapi"
)

// echoConsole returns a console stream that echoes, as nodeapi.Fake's does.
func echoConsole(t *testing.T) io.ReadWriteCloser {
	t.Helper()
	node := nodeapi.NewFake()
	node.Set("default", "tty", nodeapi.FakeVMI{})
	con, err := node.Console(context.Background(), "default", "tty")
	if err != nil {
		t.Fatal(err)
	}
	return con
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testenv.EventuallyEvery(testenv.Within(t, 10*time.Second), t, 5*time.Millisecond, what, func() (bool, string) {
		return cond(), "not yet"
	})
}

// runAsync runs virtctl in the background and returns its exit code's channel.
func (h *harness) runAsync(ctx context.Context, args ...string) <-chan int {
	done := make(chan int, 1)
	go func() { done <- run(ctx, args, h.deps()) }()
	return done
}

func exitCode(t *testing.T, done <-chan int) int {
	t.Helper()
	select {
	case code := <-done:
		return code
	case <-time.After(10 * time.Second):
		t.Fatal("virtctl did not end")
		return -1
	}
}

// Bytes typed go to the guest and what it prints comes back, until Ctrl+].
func TestConsoleEchoesUntilEscape(t *testing.T) {
	h := newHarness(t, "")
	h.api.console = func(int) (io.ReadWriteCloser, error) { return echoConsole(t), nil }
	in, typed := io.Pipe()
	h.stdin = in
	done := h.runAsync(context.Background(), "console", "tty")
	if _, err := typed.Write([]byte("hello\r\n")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the echo", func() bool { return h.stdout.String() == "hello\r\n" })
	if _, err := typed.Write([]byte("bye\x1dnot sent")); err != nil {
		t.Fatal(err)
	}
	if code := exitCode(t, done); code != 0 {
		t.Errorf("exit %d; stderr %s", code, h.stderr)
	}
	if got := h.stdout.String(); got != "hello\r\n" && got != "hello\r\nbye" {
		t.Errorf("stdout %q: the bytes after ^] reached the guest", got)
	}
	if want := "Successfully connected to tty console. The escape sequence is ^]\n\n"; h.stderr.String() != want {
		t.Errorf("stderr %q, want %q", h.stderr, want)
	}
}

// From a pipe that ends, the console keeps printing until interrupted, as
// KubeVirt's virtctl does (e.g. `echo root | virtctl console vm`).
func TestConsoleOutlivesTheEndOfStdin(t *testing.T) {
	h := newHarness(t, "")
	h.api.console = func(int) (io.ReadWriteCloser, error) { return echoConsole(t), nil }
	h.stdin = strings.NewReader("root\n")
	ctx, interrupt := context.WithCancel(context.Background())
	done := h.runAsync(ctx, "console", "tty")
	waitFor(t, "the echo", func() bool { return h.stdout.String() == "root\n" })
	select {
	case code := <-done:
		t.Fatalf("virtctl ended (%d) when stdin did", code)
	case <-time.After(100 * time.Millisecond):
	}
	interrupt()
	if code := exitCode(t, done); code != 0 {
		t.Errorf("exit %d after Ctrl+C; stderr %s", code, h.stderr)
	}
}

// While the VMI does not run yet, console waits and says so once per reason.
func TestConsoleWaitsForTheVMI(t *testing.T) {
	notRunning := status(409, "Unable to connect to VirtualMachineInstance because phase is Scheduling instead of Running", nil)
	noVMI := status(404, `virtualmachineinstance.kubevirt.io "tty" not found`, &metav1.StatusDetails{Name: "tty", Kind: "virtualmachineinstance"})
	vm := &virtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "tty"}}
	h := newHarness(t, "", vm)
	answers := []error{noVMI, noVMI, notRunning, notRunning, notRunning}
	h.api.console = func(n int) (io.ReadWriteCloser, error) {
		if n < len(answers) {
			return nil, answers[n]
		}
		return echoConsole(t), nil
	}
	h.stdin = strings.NewReader("\x1d")
	if code := exitCode(t, h.runAsync(context.Background(), "console", "tty", "--timeout=1")); code != 0 {
		t.Fatalf("exit %d; stderr %s", code, h.stderr)
	}
	want := "Waiting for VirtualMachineInstance tty: its VirtualMachine has no VirtualMachineInstance yet\n" +
		"Waiting for VirtualMachineInstance tty: Unable to connect to VirtualMachineInstance because phase is Scheduling instead of Running\n" +
		"Successfully connected to tty console. The escape sequence is ^]\n\n"
	if diff := cmp.Diff(want, h.stderr.String()); diff != "" {
		t.Errorf("stderr (-want +got):\n%s", diff)
	}
	if n := len(h.api.recorded()); n != len(answers)+1 {
		t.Errorf("%d connection attempts, want %d", n, len(answers)+1)
	}
}

// A VMI without a VM is not waited for: the error says how to find one.
func TestConsoleOfNothing(t *testing.T) {
	h := newHarness(t, "")
	h.api.console = func(int) (io.ReadWriteCloser, error) {
		return nil, status(404, `virtualmachineinstance.kubevirt.io "ghost" not found`, &metav1.StatusDetails{Name: "ghost", Kind: "virtualmachineinstance"})
	}
	if code := h.run("console", "ghost"); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	want := `Error: cannot console VirtualMachineInstance default/ghost: virtualmachineinstance.kubevirt.io "ghost" not found` + "\n" +
		"VirtualMachineInstance \"ghost\" does not run in namespace default: `kubectl get vms,vmis -n default` shows what exists; `virtctl start ghost -n default` starts a VM.\n"
	if diff := cmp.Diff(want, h.stderr.String()); diff != "" {
		t.Errorf("stderr (-want +got):\n%s", diff)
	}
}

// --timeout bounds the wait.
func TestConsoleTimeout(t *testing.T) {
	h := newHarness(t, "")
	s := &session{deps: h.deps(), ns: "default"}
	open := func(context.Context, string, string) (io.ReadWriteCloser, error) {
		return nil, status(409, "VMI is not running: it has no node yet", nil)
	}
	_, err := s.openStream(context.Background(), op{"console", kindVMI, "tty"}, 20*time.Millisecond, open)
	want := "cannot open the console of VirtualMachineInstance default/tty: still not ready after 20ms: VMI is not running: it has no node yet\n" +
		"Wait longer with --timeout=MINUTES; `kubectl get vmi tty -n default -o yaml` shows its phase and conditions."
	if err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
}

func TestCopyUntilEscape(t *testing.T) {
	for _, c := range []struct{ in, sent string }{
		{"abc", "abc"},
		{"ab\x1dc", "ab"},
		{"\x1d", ""},
		{"\x00\xff\x1b[A", "\x00\xff\x1b[A"},
	} {
		var sent strings.Builder
		_ = copyUntilEscape(&sent, strings.NewReader(c.in))
		if sent.String() != c.sent {
			t.Errorf("%q: sent %q, want %q", c.in, sent.String(), c.sent)
		}
	}
}
