package hollow_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/local/hollow"
	"github.com/virtkit/virtkit/local/node"
	"github.com/virtkit/virtkit/virt/domain"
	"github.com/virtkit/virtkit/virt/launcher"
	"github.com/virtkit/virtkit/virt/launcher/contract"
)

// launcherPod is a launcher container as local/node starts it on a hollow
// node: its per-VMI folder (an emptyDir), a containerDisk image volume and
// its termination message file mounted in the pod's view.
type launcherPod struct {
	spec   node.ProcessSpec
	layout launcher.Layout // the per-VMI folder as the node sees it
	term   string
}

func newLauncherPod(t *testing.T, n *hollow.Node, args ...string) launcherPod {
	t.Helper()
	dir := t.TempDir()
	// As long as a node's path of a pod's folder is: longer than a unix
	// socket's address may be.
	folder := filepath.Join(dir, "pods", "9a6fe8c6-58f4-4290-a8f2-3a44a55388f0", "volumes", "kubernetes.io~empty-dir", "virtkit-run")
	term := filepath.Join(dir, "termination-log")
	for _, d := range []string{folder, filepath.Join(dir, "scratch")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(term, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	image, err := n.Images().Mount(context.Background(), "example.com/guest:1")
	if err != nil {
		t.Fatal(err)
	}
	argv := append([]string{contract.Binary, "--dir", "/var/run/virtkit/uid-1", "--namespace", "default", "--name", "vm1"}, args...)
	return launcherPod{
		spec: node.ProcessSpec{Path: "/opt/bin/" + contract.Binary, Args: argv, Scratch: filepath.Join(dir, "scratch"),
			Mounts: []node.Mount{
				{Source: folder, Target: "/var/run/virtkit/uid-1"},
				{Source: image, Target: "/var/run/kubevirt/container-disks/root", ReadOnly: true},
				{Source: term, Target: corev1.TerminationMessagePathDefault},
			}},
		layout: launcher.Layout{Root: folder},
		term:   term,
	}
}

func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// startGuest defines and starts the VMI's domain through the pod's socket,
// as the handler does.
func startGuest(t *testing.T, n *hollow.Node, l launcher.Layout) domain.Manager {
	t.Helper()
	ctx := context.Background()
	m, err := n.Connect(ctx, l.LibvirtURI())
	if err != nil {
		t.Fatal(err)
	}
	doc := &libvirtxml.Domain{Type: "qemu", Name: launcher.DomainName("default", "vm1"), Memory: &libvirtxml.DomainMemory{Value: 128, Unit: "MiB"}}
	if err := m.Define(ctx, doc); err != nil {
		t.Fatal(err)
	}
	if err := m.Start(ctx, doc.Name, domain.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	return m
}

func wait(t *testing.T, p node.Process) node.ExitStatus {
	t.Helper()
	done := make(chan node.ExitStatus, 1)
	go func() { done <- p.Wait() }()
	select {
	case st := <-done:
		return st
	case <-time.After(20 * time.Second):
		t.Fatal("the process did not end")
		return node.ExitStatus{}
	}
}

func result(t *testing.T, l launcher.Layout) launcher.Result {
	t.Helper()
	b, err := os.ReadFile(l.ExitFile())
	if err != nil {
		t.Fatal(err)
	}
	var r launcher.Result
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// A launcher pod on a hollow node becomes ready, serves its domain to the
// handler through its socket, shows the pod's files to the handler, and on
// SIGTERM shuts the guest down and ends with 0, leaving its result and
// termination message and no socket.
func TestLauncherLifecycle(t *testing.T) {
	ctx := context.Background()
	n, err := hollow.New(t.TempDir(), hollow.WithPollInterval(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	lp := newLauncherPod(t, n, "--grace-period", "5s")
	p, err := n.Runner().Start(ctx, lp.spec)
	if err != nil {
		t.Fatal(err)
	}
	waitFile(t, lp.layout.ReadyFile())
	// The readiness probe, through the pod's view.
	code, _, err := n.Runner().Exec(ctx, p, []string{"test", "-f", "/var/run/virtkit/uid-1/ready"})
	if err != nil || code != 0 {
		t.Fatalf("readiness probe: code %d, %v; want 0", code, err)
	}
	if code, out, _ := n.Runner().Exec(ctx, p, []string{"virsh", "list"}); code != 127 || !strings.Contains(string(out), "no such command") {
		t.Errorf("another command: code %d %q, want 127 and why", code, out)
	}
	if n.Launchers() != 1 {
		t.Errorf("Launchers() = %d, want 1", n.Launchers())
	}

	m := startGuest(t, n, lp.layout)
	pod, err := n.OpenPod(ctx, lp.layout.LibvirtSocket())
	if err != nil {
		t.Fatal(err)
	}
	// The containerDisk's one file, where the handler looks for it.
	disk := filepath.Join(pod.Root, "var/run/kubevirt/container-disks/root/disk", hollow.DiskFile)
	if st, err := os.Lstat(disk); err != nil || !st.Mode().IsRegular() {
		t.Errorf("the pod's view lacks the disk file %s: %v", disk, err)
	}
	ifs, err := pod.Network.Discover(ctx)
	if err != nil || len(ifs) != 1 || ifs[0].Name != "eth0" || len(ifs[0].IPs) != 1 {
		t.Errorf("the pod's network: %+v, %v; want one eth0 with an address", ifs, err)
	}

	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if st := wait(t, p); st != (node.ExitStatus{Code: 0}) {
		t.Errorf("exit %+v, want code 0", st)
	}
	if st, _, _ := m.State(ctx, launcher.DomainName("default", "vm1")); st != domain.StateShutoff {
		t.Errorf("domain %s after the stop, want shut off", st)
	}
	if r := result(t, lp.layout); r.Code != launcher.ExitOK {
		t.Errorf("result %+v, want ExitOK", r)
	}
	if b, _ := os.ReadFile(lp.term); len(b) == 0 {
		t.Error("no termination message")
	}
	if _, err := os.Lstat(lp.layout.LibvirtSocket()); !os.IsNotExist(err) {
		t.Errorf("socket left behind: %v", err)
	}
	if _, err := n.OpenPod(ctx, lp.layout.LibvirtSocket()); err == nil {
		t.Error("OpenPod found a launcher that ended")
	}
	if n.Launchers() != 0 {
		t.Errorf("Launchers() = %d after the end, want 0", n.Launchers())
	}
}

// A guest that shuts down ends its launcher with 0; a killed launcher pod
// destroys its guest and ends with 137.
func TestGuestEndAndKill(t *testing.T) {
	ctx := context.Background()
	n, err := hollow.New(t.TempDir(), hollow.WithPollInterval(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}

	lp := newLauncherPod(t, n)
	p, err := n.Runner().Start(ctx, lp.spec)
	if err != nil {
		t.Fatal(err)
	}
	waitFile(t, lp.layout.ReadyFile())
	m := startGuest(t, n, lp.layout)
	if err := m.Shutdown(ctx, launcher.DomainName("default", "vm1")); err != nil {
		t.Fatal(err)
	}
	if st := wait(t, p); st.Code != 0 {
		t.Errorf("after the guest's shutdown: exit %+v, want 0", st)
	}

	lp = newLauncherPod(t, n)
	p, err = n.Runner().Start(ctx, lp.spec)
	if err != nil {
		t.Fatal(err)
	}
	waitFile(t, lp.layout.ReadyFile())
	m = startGuest(t, n, lp.layout)
	if err := n.Runner().Kill(ctx, p.Ref()); err != nil {
		t.Fatal(err)
	}
	want := node.ExitStatus{Code: 137, Signal: int(syscall.SIGKILL)}
	if diff := cmp.Diff(want, wait(t, p)); diff != "" {
		t.Errorf("killed (-want +got):\n%s", diff)
	}
	if st, _, _ := m.State(ctx, launcher.DomainName("default", "vm1")); st != domain.StateShutoff {
		t.Errorf("domain %s after the kill, want shut off", st)
	}
	if err := n.Runner().Kill(ctx, p.Ref()); err != nil {
		t.Errorf("killing a gone process: %v", err)
	}
}

// Bad launcher arguments fail the start with the flag named; a container
// that is not a launcher runs until it is stopped.
func TestOtherProcesses(t *testing.T) {
	ctx := context.Background()
	n, err := hollow.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	lp := newLauncherPod(t, n)
	bad := lp.spec
	bad.Args = []string{contract.Binary, "--dir", "/elsewhere", "--namespace", "default", "--name", "vm1"}
	if _, err := n.Runner().Start(ctx, bad); err == nil || !strings.Contains(err.Error(), "--dir /elsewhere") {
		t.Errorf("a --dir no volume holds: %v, want an error naming it", err)
	}
	bad.Args = []string{contract.Binary, "--dir", "/var/run/virtkit/uid-1"}
	if _, err := n.Runner().Start(ctx, bad); err == nil || !strings.Contains(err.Error(), "--namespace") {
		t.Errorf("no --namespace: %v, want an error naming it", err)
	}

	other := node.ProcessSpec{Path: "/bin/sleep", Args: []string{"sleep", "1000"}, Scratch: t.TempDir()}
	p, err := n.Runner().Start(ctx, other)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if st := wait(t, p); st.Code != 0 {
		t.Errorf("stopped: exit %+v, want 0", st)
	}
}
