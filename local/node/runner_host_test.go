package node

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/virtkit/virtkit/internal/testenv"
)

// The host runner's process sees its mounts (at targets the host does not
// have), answers exec probes in its namespaces, and Kill leaves nothing.
func TestHostRunner(t *testing.T) {
	testenv.Integration(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := testenv.Dir(t)
	vol := filepath.Join(dir, "vol")
	if err := os.MkdirAll(vol, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(vol, "x"), []byte("from the volume"), 0o644); err != nil {
		t.Fatal(err)
	}
	log, err := os.Create(filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	h := NewHostRunner()
	defer h.Close()
	p, err := h.Start(ctx, ProcessSpec{Path: "/bin/sh", Args: []string{"sh", "-c", "echo started; exec sleep 1000"},
		Env: []string{"PATH=" + defaultPath, testenv.OwnerEnv + "=" + strconv.Itoa(os.Getpid())}, Dir: "/vkt-no-such-dir/work",
		Mounts:  []Mount{{Source: vol, Target: "/etc/vkt-runner-test/vol", ReadOnly: true}},
		Scratch: filepath.Join(dir, "scratch"), Log: log})
	if err != nil {
		t.Fatal(err)
	}
	code, out, err := h.Exec(ctx, p, []string{"sh", "-c", "cat /etc/vkt-runner-test/vol/x; pwd; touch /etc/vkt-runner-test/vol/y"})
	if err != nil || !strings.HasPrefix(string(out), "from the volume/vkt-no-such-dir/work\n") || code == 0 {
		t.Errorf("exec = %d, %q, %v; want the volume's file, the working directory and a failed write (read-only)", code, out, err)
	}
	if st, err := statIn(p.Root(), "/etc/vkt-runner-test/vol/x"); err != nil || st.Size() != int64(len("from the volume")) {
		t.Errorf("through Root: %v", err)
	}
	for _, host := range []string{"/etc/vkt-runner-test", "/vkt-no-such-dir"} {
		if _, err := os.Stat(host); err == nil {
			t.Errorf("the host got %s", host)
		}
	}
	if err := h.Kill(ctx, p.Ref()); err != nil {
		t.Fatal(err)
	}
	if st := p.Wait(); st.Signal != int(syscall.SIGKILL) || st.Code != 137 {
		t.Errorf("after Kill: %+v", st)
	}
	if b, _ := os.ReadFile(log.Name()); string(b) != "started\n" {
		t.Errorf("log = %q", b)
	}

	// A command that does not exist fails Start with the reason.
	_, err = h.Start(ctx, ProcessSpec{Path: "/vkt-missing", Args: []string{"x"}, Log: log, Scratch: filepath.Join(dir, "scratch")})
	if err == nil || !strings.Contains(err.Error(), "/vkt-missing") {
		t.Errorf("start of a missing executable: %v", err)
	}
}

// Kill ends what a container left in its mount namespace after its own
// process exited (the namespace is held since Start), and never kills by a
// namespace inode it does not hold: a ref recorded before a node restart,
// whose process is gone, may name an inode the kernel has since given to
// another namespace.
func TestKillByMountNamespace(t *testing.T) {
	testenv.Integration(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := testenv.Dir(t)
	log, err := os.Create(filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	env := []string{"PATH=" + defaultPath, testenv.OwnerEnv + "=" + strconv.Itoa(os.Getpid())}
	h := NewHostRunner()
	defer h.Close()

	// The container's process starts a daemon in a process group of its
	// own (as libvirtd starts QEMU) and exits.
	p, err := h.Start(ctx, ProcessSpec{Path: "/bin/sh", Args: []string{"sh", "-c", "setsid sleep 1000 & echo $! > /tmp/vkt-daemon.pid; sleep 0.2"},
		Env: env, Scratch: filepath.Join(dir, "scratch"), Log: log,
		Mounts: []Mount{{Source: dir, Target: "/tmp"}}})
	if err != nil {
		t.Fatal(err)
	}
	p.Wait()
	b, err := os.ReadFile(filepath.Join(dir, "vkt-daemon.pid"))
	if err != nil {
		t.Fatal(err)
	}
	daemon, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if !processAlive(daemon) {
		t.Fatalf("the daemon (pid %d) did not outlive the container's process", daemon)
	}
	if err := h.Kill(ctx, p.Ref()); err != nil {
		t.Fatal(err)
	}
	if processAlive(daemon) {
		t.Errorf("the daemon (pid %d) survived Kill", daemon)
	}

	// Another mount namespace, which a stale ref's inode now names.
	other, err := h.Start(ctx, ProcessSpec{Path: "/bin/sh", Args: []string{"sh", "-c", "exec sleep 1000"},
		Env: env, Scratch: filepath.Join(dir, "scratch2"), Log: log})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = h.Kill(context.Background(), other.Ref()) }()
	stale := ProcessRef{PID: p.Ref().PID, StartTime: p.Ref().StartTime, MountNS: other.Ref().MountNS}
	if err := NewHostRunner().Kill(ctx, stale); err != nil {
		t.Fatal(err)
	}
	if !processAlive(other.Ref().PID) {
		t.Error("a Kill of a gone process killed another namespace's process by its reused inode")
	}
}

// processAlive reports whether pid runs (a zombie does not).
func processAlive(pid int) bool {
	return syscall.Kill(pid, 0) == nil && !zombie(pid)
}

// A spec's user is who the process and its exec probes run as: its user,
// group and supplementary groups, no capability left, no_new_privs set,
// and the account it was given in its view of /etc/passwd.
func TestHostRunnerUser(t *testing.T) {
	testenv.Integration(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := testenv.Dir(t)
	scratch := filepath.Join(dir, "scratch")
	if err := os.MkdirAll(scratch, 0o700); err != nil {
		t.Fatal(err)
	}
	log, err := os.Create(filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	id := &Identity{UID: 4107, GID: 4107, Groups: []uint32{4108}, NoNewPrivs: true}
	accounts, err := accountMounts(id, nodePasswd, nodeGroup, scratch)
	if err != nil {
		t.Fatal(err)
	}
	h := NewHostRunner()
	defer h.Close()
	const script = `echo "$(id -u) $(id -g) $(id -G) $(id -un)"; grep -E '^(CapEff|CapPrm|NoNewPrivs)' /proc/self/status | tr -s '\t' ' '; exec sleep 1000`
	p, err := h.Start(ctx, ProcessSpec{Path: "/bin/sh", Args: []string{"sh", "-c", script},
		Env:    []string{"PATH=" + defaultPath, testenv.OwnerEnv + "=" + strconv.Itoa(os.Getpid())},
		Mounts: accounts, Scratch: scratch, Log: log, User: id})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = h.Kill(context.Background(), p.Ref()) }()
	want := "4107 4107 4107 4108 container-4107\nCapPrm: 0000000000000000\nCapEff: 0000000000000000\nNoNewPrivs: 1\n"
	var got []byte
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if got, _ = os.ReadFile(log.Name()); string(got) == want {
			break
		}
	}
	if string(got) != want {
		t.Errorf("the process says %q, want %q", got, want)
	}
	code, out, err := h.Exec(ctx, p, []string{"id", "-u"})
	if err != nil || code != 0 || string(out) != "4107\n" {
		t.Errorf("exec probe: %d, %q, %v; want it run as 4107", code, out, err)
	}
	if b, err := os.ReadFile(nodePasswd); err != nil || strings.Contains(string(b), "container-4107") {
		t.Errorf("the node's %s got the container's account (%v)", nodePasswd, err)
	}
	// It still dies with the node: its change of user cleared the
	// parent-death signal it started with, and the helper set it again.
	dump, err := os.Create(filepath.Join(dir, "dump"))
	if err != nil {
		t.Fatal(err)
	}
	defer dump.Close()
	d, err := h.Start(ctx, ProcessSpec{Path: "/usr/bin/setpriv", Args: []string{"setpriv", "--dump"},
		Env: []string{"PATH=" + defaultPath}, Scratch: scratch, Log: dump, User: id})
	if err != nil {
		t.Fatal(err)
	}
	d.Wait()
	if b, _ := os.ReadFile(dump.Name()); !strings.Contains(string(b), "Parent death signal: KILL") {
		t.Errorf("setpriv --dump, run as the user, says:\n%s\nwant a parent-death signal KILL", b)
	}
}

// A subPath mount shows the folder the subPath names inside its volume,
// followed through a link that stays in the volume; a subPath whose link
// leaves the volume fails Start with the reason, and nothing of the
// node's is mounted.
func TestHostRunnerSubPath(t *testing.T) {
	testenv.Integration(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir, log, h := newTestRunner(t)
	vol := filepath.Join(dir, "vol")
	must(t, os.MkdirAll(filepath.Join(vol, "state"), 0o755))
	must(t, os.WriteFile(filepath.Join(vol, "state", "x"), []byte("in the subPath"), 0o644))
	must(t, os.Symlink("state", filepath.Join(vol, "in")))
	must(t, os.Symlink("/etc", filepath.Join(vol, "out")))
	spec := func(sub string) ProcessSpec {
		return ProcessSpec{Path: "/bin/sh", Args: []string{"sh", "-c", "exec sleep 1000"},
			Env:     []string{"PATH=" + defaultPath, testenv.OwnerEnv + "=" + strconv.Itoa(os.Getpid())},
			Mounts:  []Mount{{Source: vol, SubPath: sub, Target: "/vkt-subpath"}},
			Scratch: filepath.Join(dir, "scratch"), Log: log}
	}
	p, err := h.Start(ctx, spec("in"))
	must(t, err)
	defer func() { _ = h.Kill(context.Background(), p.Ref()) }()
	if code, out, err := h.Exec(ctx, p, []string{"cat", "/vkt-subpath/x"}); err != nil || code != 0 || string(out) != "in the subPath" {
		t.Errorf("the subPath's file: %d, %q, %v", code, out, err)
	}
	if _, err := h.Start(ctx, spec("out")); err == nil || !strings.Contains(err.Error(), "leads outside the volume") {
		t.Errorf("start with a subPath linking out of the volume: %v, want a refusal", err)
	}
}

// newTestRunner is a host runner for a test, its folder and a log file,
// released when the test ends.
func newTestRunner(t *testing.T) (string, *os.File, *HostRunner) {
	t.Helper()
	dir := testenv.Dir(t)
	log, err := os.Create(filepath.Join(dir, "log"))
	must(t, err)
	t.Cleanup(func() { log.Close() })
	h := NewHostRunner()
	t.Cleanup(func() { h.Close() })
	return dir, log, h
}

// A volumeDevice is a node of the pod's own, owned by the container's
// user: the host's /dev gets nothing, and a node the pod changes is not
// the host's. A read-only one is readable only (0440). One right in a
// mounted volume's folder is made in that folder.
func TestHostRunnerDevice(t *testing.T) {
	testenv.Integration(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir, log, h := newTestRunner(t)
	vol := filepath.Join(dir, "vol")
	must(t, os.MkdirAll(vol, 0o777))
	// loop0's numbers: mknod needs no such device attached.
	spec := ProcessSpec{Path: "/bin/sh", Args: []string{"sh", "-c", "exec sleep 1000"},
		Env:    []string{"PATH=" + defaultPath, testenv.OwnerEnv + "=" + strconv.Itoa(os.Getpid())},
		Mounts: []Mount{{Source: vol, Target: "/vkt-vol"}},
		Devices: []Device{{Target: "/dev/vkt-block", Major: 7, Minor: 0},
			{Target: "/dev/vkt-block-ro", Major: 7, Minor: 0, ReadOnly: true},
			{Target: "/vkt-vol/in-volume", Major: 7, Minor: 1}},
		Scratch: filepath.Join(dir, "scratch"), Log: log, User: &Identity{UID: 4107, GID: 4108}}
	p, err := h.Start(ctx, spec)
	must(t, err)
	defer func() { _ = h.Kill(context.Background(), p.Ref()) }()
	code, out, err := h.Exec(ctx, p, []string{"stat", "-c", "%F %t:%T %u:%g %a", "/dev/vkt-block", "/dev/vkt-block-ro"})
	if want := "block special file 7:0 4107:4108 660\nblock special file 7:0 4107:4108 440\n"; err != nil || code != 0 || string(out) != want {
		t.Errorf("the devices in the view: %d, %q, %v; want %q", code, out, err, want)
	}
	if code, out, err := h.Exec(ctx, p, []string{"ls", "/dev/null", "/dev/pts"}); err != nil || code != 0 {
		t.Errorf("the host's /dev entries in the view: %d, %q, %v", code, out, err)
	}
	for _, host := range []string{"/dev/vkt-block", "/dev/vkt-block-ro"} {
		if _, err := os.Lstat(host); err == nil {
			t.Errorf("the host got %s", host)
		}
	}
	// In a volume's folder, the node is made there, as a runtime makes it.
	var st syscall.Stat_t
	if err := syscall.Lstat(filepath.Join(vol, "in-volume"), &st); err != nil || st.Mode != syscall.S_IFBLK|0o660 || st.Rdev != 7<<8|1 || st.Uid != 4107 || st.Gid != 4108 {
		t.Errorf("the node in the volume's folder: %+v, %v; want block 7:1, 0660, 4107:4108", st, err)
	}

	// A device path the view has already is refused, not replaced.
	spec.Devices = []Device{{Target: "/dev/null", Major: 7, Minor: 0}}
	if _, err := h.Start(ctx, spec); err == nil || !strings.Contains(err.Error(), "/dev/null: the path exists") {
		t.Errorf("a device at /dev/null: %v, want a refusal naming it", err)
	}
}
