package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/internal/linuxproc"
	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/internal/testguest"
	"github.com/virtkit/virtkit/virt/domain"
	domainlibvirt "github.com/virtkit/virtkit/virt/domain/libvirt"
	"github.com/virtkit/virtkit/virt/launcher"
	"github.com/virtkit/virtkit/virt/launcher/contract"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// launcherProc is a running virt-launcher binary with a booted test guest.
type launcherProc struct {
	cmd    *exec.Cmd
	layout launcher.Layout
	m      domain.Manager
	name   string
	stderr *bytes.Buffer
	done   chan struct{}
}

// buildOnce builds the binary under test once per test run, into _output/test.
var buildOnce = sync.OnceValues(func() (string, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(root, "_output", "test", "virt-launcher")
	if b, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, b)
	}
	return bin, nil
})

func buildLauncher(t *testing.T) string {
	t.Helper()
	bin, err := buildOnce()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// startLauncher runs the binary, waits until it is ready, then plays the
// handler: defines and starts the test guest over the launcher's socket and
// waits for the guest's ready line.
func startLauncher(t *testing.T, bin string, grace time.Duration, extra ...string) *launcherProc {
	t.Helper()
	return startLauncherAs(t, nil, bin, grace, append([]string{"--libvirt-cache-dir", testenv.CapabilitiesCache(t)}, extra...)...)
}

// startLauncherAs is startLauncher with the launcher run as user as (nil:
// root), in a folder of that user's, as in a launcher pod's emptyDir.
func startLauncherAs(t *testing.T, as *syscall.Credential, bin string, grace time.Duration, extra ...string) *launcherProc {
	t.Helper()
	root := filepath.Join(testenv.Dir(t), "vmi")
	args := append([]string{"--dir", root, "--namespace", "default", "--name", "tiny",
		"--grace-period", grace.String()}, extra...)
	cmd := exec.Command(bin, args...)
	if as != nil {
		if err := os.Mkdir(root, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(root, int(as.Uid), int(as.Gid)); err != nil {
			t.Fatal(err)
		}
		cmd = asUser(t, as, bin, args...)
	}
	cmd.Env = append(os.Environ(), testenv.OwnerEnv+"="+strconv.Itoa(os.Getpid()))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &launcherProc{cmd: cmd, layout: launcher.Layout{Root: root}, name: launcher.DomainName("default", "tiny"), stderr: &stderr, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-p.done
	})

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for {
		if _, err := os.Stat(p.layout.ReadyFile()); err == nil {
			break
		}
		select {
		case <-p.done:
			t.Fatalf("launcher exited before it was ready: %s", stderr.String())
		case <-ctx.Done():
			t.Fatal("launcher not ready")
		case <-time.After(20 * time.Millisecond):
		}
	}
	uri, err := os.ReadFile(p.layout.ReadyFile())
	if err != nil {
		t.Fatal(err)
	}
	m, err := domainlibvirt.New(ctx, strings.TrimSpace(string(uri)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	p.m = m

	doc := testguest.Domain(p.name, testenv.Guest(t), 128, p.layout.SerialLog())
	doc.Devices.Serials[0].Source = &libvirtxml.DomainChardevSource{File: &libvirtxml.DomainChardevSourceFile{Path: p.layout.SerialLog()}}
	if err := m.Define(ctx, doc); err != nil {
		t.Fatal(err)
	}
	if err := m.Start(ctx, p.name, domain.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitConsole(t, ctx, p.layout.SerialLog(), regexp.MustCompile(`^`+testguest.ReadyMarker+`$`))
	return p
}

// wait returns the launcher's exit code and its recorded Result.
func (p *launcherProc) wait(t *testing.T) (int, launcher.Result) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("launcher did not exit; stderr:\n%s", p.stderr.String())
	}
	var r launcher.Result
	b, err := os.ReadFile(p.layout.ExitFile())
	if err != nil {
		t.Fatalf("no exit file: %v; stderr:\n%s", err, p.stderr.String())
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p.layout.ReadyFile()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ready file still there after exit")
	}
	return p.cmd.ProcessState.ExitCode(), r
}

// assertNothingLeft checks that no process of the launcher's libvirtd
// (libvirtd, QEMU) survived it: none in its namespace, and none naming its
// folder (a session daemon has no namespace).
func assertNothingLeft(t *testing.T, p *launcherProc) {
	t.Helper()
	procs, err := linuxproc.List(linuxproc.Any(linuxproc.SeesMountFrom(p.layout.LibvirtDir()), linuxproc.NamesPath(p.layout.LibvirtDir())))
	if err != nil {
		t.Fatal(err)
	}
	for _, pr := range procs {
		t.Errorf("left behind: %s", pr)
	}
}

func qemuPID(t *testing.T, p *launcherProc) int {
	t.Helper()
	return pidFile(t, filepath.Join(p.layout.LibvirtDir(), "run", "qemu", p.name+".pid"))
}

func pidFile(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func TestStopOnSIGTERMShutsTheGuestDownGracefully(t *testing.T) {
	testenv.Integration(t)
	p := startLauncher(t, buildLauncher(t), 60*time.Second)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code, r := p.wait(t)
	if code != 0 || !strings.Contains(r.Reason, "guest shut down on request") {
		t.Errorf("exit %d %q, want 0 and a graceful shutdown; stderr:\n%s", code, r.Reason, p.stderr)
	}
	if !strings.Contains(testguest.Tail(p.layout.SerialLog(), 5), testguest.PowerOff) {
		t.Errorf("the guest did not power itself off:\n%s", testguest.Tail(p.layout.SerialLog(), 5))
	}
	assertNothingLeft(t, p)
}

func TestStopWithNoGracePeriodDestroys(t *testing.T) {
	testenv.Integration(t)
	p := startLauncher(t, buildLauncher(t), 0)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code, r := p.wait(t)
	if code != 0 || !strings.Contains(r.Reason, "did not power off within the grace period") {
		t.Errorf("exit %d %q, want 0 and a destroy after the grace period", code, r.Reason)
	}
	assertNothingLeft(t, p)
}

func TestExitsZeroWhenTheGuestShutsDown(t *testing.T) {
	testenv.Integration(t)
	p := startLauncher(t, buildLauncher(t), 30*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.m.Shutdown(ctx, p.name); err != nil {
		t.Fatal(err)
	}
	code, r := p.wait(t)
	if code != 0 || r.Reason != "guest shut down" {
		t.Errorf("exit %d %q, want 0 %q", code, r.Reason, "guest shut down")
	}
	assertNothingLeft(t, p)
}

// QEMU runs as KubeVirt's qemu user with no capability; when it dies the
// launcher exits with ExitGuestCrashed.
func TestExitsNonZeroWhenQEMUIsKilled(t *testing.T) {
	testenv.Integration(t)
	p := startLauncher(t, buildLauncher(t), 30*time.Second)
	qemu := qemuPID(t, p)
	sec, err := linuxproc.SecurityOf(qemu)
	if err != nil {
		t.Fatal(err)
	}
	if sec.UID != contract.QEMUUser || sec.Effective != 0 {
		t.Errorf("QEMU runs as uid %d with capabilities %v, want uid %d and none", sec.UID, linuxproc.CapabilityNames(sec.Effective), contract.QEMUUser)
	}
	killQEMU(t, p, qemu)
}

func TestExitsNonZeroAndKillsQEMUWhenLibvirtdIsKilled(t *testing.T) {
	testenv.Integration(t)
	p := startLauncher(t, buildLauncher(t), 30*time.Second)
	killLibvirtd(t, p, qemuPID(t, p))
}

// killQEMU kills p's QEMU (qemu) and checks that the launcher ends as for
// a crashed guest, leaving nothing running.
func killQEMU(t *testing.T, p *launcherProc, qemu int) {
	t.Helper()
	if err := syscall.Kill(qemu, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	code, r := p.wait(t)
	if code != launcher.ExitGuestCrashed {
		t.Errorf("exit %d %q, want %d (guest crashed)", code, r.Reason, launcher.ExitGuestCrashed)
	}
	assertNothingLeft(t, p)
}

// killLibvirtd kills p's libvirtd and checks that the launcher ends as for
// a dead libvirtd, QEMU (qemu) with it, leaving nothing running.
func killLibvirtd(t *testing.T, p *launcherProc, qemu int) {
	t.Helper()
	if err := syscall.Kill(pidFile(t, filepath.Join(p.layout.LibvirtDir(), "run", "libvirtd.pid")), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	code, r := p.wait(t)
	if code != launcher.ExitLibvirtdDied {
		t.Errorf("exit %d %q, want %d (libvirtd died)", code, r.Reason, launcher.ExitLibvirtdDied)
	}
	if linuxproc.Alive(qemu) {
		t.Errorf("QEMU (pid %d) survived its launcher", qemu)
	}
	assertNothingLeft(t, p)
}

func TestSetupFailureExitsWithReason(t *testing.T) {
	testenv.Integration(t)
	bin := buildLauncher(t)
	root := filepath.Join(testenv.Dir(t), "vmi")
	cmd := exec.Command(bin, "--dir", root, "--namespace", "default", "--name", "tiny", "--libvirtd", "/bin/false")
	out, _ := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != launcher.ExitSetupFailed {
		t.Errorf("exit %d, want %d; output:\n%s", code, launcher.ExitSetupFailed, out)
	}
	if !strings.Contains(string(out), "libvirtd: exited during start-up") {
		t.Errorf("output does not say why:\n%s", out)
	}
}

// An attachment pod's command holds until SIGTERM and exits 0, without a
// VMI's flags and without starting libvirtd.
func TestHoldExitsZeroOnSIGTERM(t *testing.T) {
	testenv.Integration(t)
	cmd := exec.Command(buildLauncher(t), "--"+contract.FlagHold, "--libvirtd", "/bin/false")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		t.Fatalf("ended before SIGTERM: %v; output:\n%s", err, out.String())
	case <-time.After(500 * time.Millisecond):
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("exit: %v, want 0; output:\n%s", err, out.String())
		}
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("still running 10 s after SIGTERM")
	}
}

// A launcher that is not root, as a launcher pod runs under KubeVirt's qemu
// user: its libvirtd runs in session mode, in no mount namespace of its own
// and with no capability, and QEMU as the same user with none; the guest
// boots, and when QEMU dies the launcher ends as for a crashed guest and
// leaves nothing running.
func TestRunsAsTheQEMUUser(t *testing.T) {
	testenv.Integration(t)
	qemuUser := &syscall.Credential{Uid: contract.QEMUUser, Gid: contract.QEMUGroup}
	p := startLauncherAs(t, qemuUser, buildLauncher(t), 30*time.Second)
	run := filepath.Join(p.layout.LibvirtDir(), "run")
	launcherNS, err := linuxproc.MountNamespaceOf(p.cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	qemu := sessionQEMUPID(t, p)
	for what, pid := range map[string]int{"libvirtd": pidFile(t, filepath.Join(run, "libvirtd.pid")), "QEMU": qemu} {
		sec, err := linuxproc.SecurityOf(pid)
		if err != nil {
			t.Fatal(err)
		}
		if sec.UID != contract.QEMUUser || sec.Effective != 0 {
			t.Errorf("%s runs as uid %d with capabilities %v, want uid %d and none", what, sec.UID,
				linuxproc.CapabilityNames(sec.Effective), contract.QEMUUser)
		}
		if ns, err := linuxproc.MountNamespaceOf(pid); err != nil || ns != launcherNS {
			t.Errorf("%s in mount namespace %d (%v), want the launcher's", what, ns, err)
		}
	}
	killQEMU(t, p, qemu)
}

// asUser runs bin as the user as, as a container image that names that
// user runs it: in a mount namespace of its own whose /etc/passwd has the
// user (libvirt looks its user up; the host may not know uid 107).
func asUser(t *testing.T, as *syscall.Credential, bin string, args ...string) *exec.Cmd {
	t.Helper()
	host, err := os.ReadFile("/etc/passwd")
	if err != nil {
		t.Fatal(err)
	}
	passwd := filepath.Join(testenv.Dir(t), "passwd")
	line := fmt.Sprintf("qemu:x:%d:%d:qemu user:/:/usr/sbin/nologin\n", as.Uid, as.Gid)
	if err := os.WriteFile(passwd, append(host, line...), 0o644); err != nil {
		t.Fatal(err)
	}
	const script = `set -e
mount --bind "$1" /etc/passwd
uid=$2; gid=$3; shift 3
exec setpriv --reuid="$uid" --regid="$gid" --clear-groups --inh-caps=-all --bounding-set=-all "$@"`
	cmd := exec.Command("/bin/sh", append([]string{"-c", script, "as-user", passwd, strconv.Itoa(int(as.Uid)), strconv.Itoa(int(as.Gid)), bin}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	return cmd
}

// A launcher that is not root whose libvirtd dies ends QEMU too, although
// no mount namespace holds them: it finds QEMU by the daemon's folder.
func TestAsTheQEMUUserKillsQEMUWhenLibvirtdIsKilled(t *testing.T) {
	testenv.Integration(t)
	p := startLauncherAs(t, &syscall.Credential{Uid: contract.QEMUUser, Gid: contract.QEMUGroup}, buildLauncher(t), 30*time.Second)
	killLibvirtd(t, p, sessionQEMUPID(t, p))
}

// sessionQEMUPID is QEMU's PID under a session libvirtd, whose pid files
// are below its runtime folder.
func sessionQEMUPID(t *testing.T, p *launcherProc) int {
	t.Helper()
	return pidFile(t, filepath.Join(p.layout.LibvirtDir(), "run", "libvirt", "qemu", "run", p.name+".pid"))
}
