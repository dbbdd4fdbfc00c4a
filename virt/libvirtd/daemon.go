package libvirtd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"

	"github.com/virtkit/virtkit/internal/linuxproc"
)

// Daemon is a running private libvirtd.
type Daemon struct {
	cfg Config
	cmd *exec.Cmd
	ns  linuxproc.Namespace
	// pin holds the namespace open from Start until Stop saw it empty, so
	// that ns names it and no later one; nil once released.
	mu  sync.Mutex
	pin *os.File
	// stopped is set once Stop saw nothing of the daemon left.
	stopped bool
	// uid is the daemon's user.
	uid   int
	log   logr.Logger
	done  chan struct{}
	exit  error
	start time.Time
}

// mountScript runs in the daemon's fresh mount namespace (private
// propagation, set up by the Go runtime): it binds the instance folders over
// libvirt's fixed system paths and becomes libvirtd. The pid file goes into
// the instance's run folder: libvirtd's default, /run/libvirtd.pid, is not
// below a bound folder, so two instances would fight over the host's one. Arguments: the binary,
// then the five instance folders in the order of libvirtPaths.
const mountScript = `set -e
bin=$1; shift
for target in /etc/libvirt /run/libvirt /var/lib/libvirt /var/log/libvirt /var/cache/libvirt; do
	mkdir -p "$target"
	mount --bind "$1" "$target"
	shift
done
exec "$bin" -f /etc/libvirt/libvirtd.conf -p /run/libvirt/libvirtd.pid
`

// Start writes the configuration into cfg.Dir and starts libvirtd in a private
// mount namespace (in session mode, Config.Session, as the caller's user or
// WithUser's, without one). It returns once the daemon accepts connections on its
// socket, or with an error naming its log when it does not; in that case
// nothing of it is left running. The daemon outlives ctx: stop it with
// [Daemon.Stop].
func Start(ctx context.Context, cfg Config, opts ...Option) (*Daemon, error) {
	o := options{log: logr.Discard()}
	for _, opt := range opts {
		opt(&o)
	}
	cfg, err := cfg.WithDefaults()
	if err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	bin, err := findBinary(cfg.Binary)
	if err != nil {
		return nil, err
	}
	p := cfg.Paths()
	for _, d := range []string{p.Etc, p.Run, p.Runtime, p.Lib, p.Log, p.Cache, p.QEMULogDir} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return nil, fmt.Errorf("libvirtd: create %s: %w", d, err)
		}
	}
	if o := cfg.QEMUAs; o != nil {
		// QEMU reaches its monitor socket, keys and pid file under
		// /run/libvirt and /var/lib/libvirt, which libvirt gives it below.
		for _, d := range []string{p.Run, p.Lib} {
			if err := os.Lchown(d, -1, o.GID); err != nil {
				return nil, fmt.Errorf("libvirtd: giving %s to QEMU's group: %w", d, err)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(p.Etc, "libvirtd.conf"), RenderLibvirtdConf(cfg), 0o640); err != nil {
		return nil, fmt.Errorf("libvirtd: write libvirtd.conf: %w", err)
	}
	qemuConf := filepath.Join(p.Etc, "qemu.conf")
	if cfg.Session {
		// A session daemon reads it from $XDG_CONFIG_HOME/libvirt.
		qemuConf = filepath.Join(p.Etc, "libvirt", "qemu.conf")
		if err := session(cfg); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(qemuConf, RenderQEMUConf(cfg), 0o640); err != nil {
		return nil, fmt.Errorf("libvirtd: write qemu.conf: %w", err)
	}
	driverEnv, err := linkDrivers(cfg.Drivers, p.DriverDir)
	if err != nil {
		return nil, err
	}
	// A socket left by an earlier daemon would make readiness look immediate.
	_ = os.Remove(p.Socket)
	stderr, err := os.OpenFile(p.Stderr, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o640)
	if err != nil {
		return nil, fmt.Errorf("libvirtd: %w", err)
	}
	defer stderr.Close()

	var cmd *exec.Cmd
	if cfg.Session {
		cmd = exec.Command(bin, "-f", filepath.Join(p.Etc, "libvirtd.conf"), "-p", filepath.Join(p.Run, "libvirtd.pid"))
		cmd.Env = append(os.Environ(), sessionEnv(cfg)...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	} else {
		cmd = exec.Command("/bin/sh", "-c", mountScript, "libvirtd-mounts", bin, p.Etc, p.Run, p.Lib, p.Log, p.Cache)
		cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS, Setpgid: true}
	}
	cmd.Env = append(append(cmd.Env, driverEnv...), o.env...)
	cmd.Stdout, cmd.Stderr = stderr, stderr
	cmd.Dir = "/"
	if u := o.user; u != nil {
		dirs := []string{cfg.Dir}
		if cfg.ConfigDir != "" {
			dirs = append(dirs, cfg.ConfigDir) // outside Dir
		}
		for _, dir := range dirs {
			if err := giveTo(dir, *u); err != nil {
				return nil, err
			}
		}
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(u.UID), Gid: uint32(u.GID)}
	}
	begin := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("libvirtd: start %s: %w", bin, err)
	}
	d := &Daemon{cfg: cfg, cmd: cmd, log: o.log, done: make(chan struct{}), start: begin, uid: os.Geteuid()}
	if o.user != nil {
		d.uid = o.user.UID
	}
	go func() {
		d.exit = cmd.Wait()
		close(d.done)
	}()
	if cfg.Session {
		// The daemon shares the caller's mount namespace, which the
		// caller's own life keeps from passing to another.
		d.ns, err = linuxproc.MountNamespaceOf(os.Getpid())
	} else {
		d.pin, d.ns, err = linuxproc.OpenMountNamespace(cmd.Process.Pid)
	}
	if err == nil {
		err = d.waitReady(ctx)
	}
	if err != nil {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if serr := d.Stop(stopCtx); serr != nil {
			err = errors.Join(err, serr)
		}
		return nil, err
	}
	o.log.V(1).Info("libvirtd ready", "dir", cfg.Dir, "pid", cmd.Process.Pid, "after", time.Since(begin))
	return d, nil
}

func findBinary(name string) (string, error) {
	if name == "" {
		name = "libvirtd"
	}
	if filepath.IsAbs(name) {
		return name, nil
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	if p := filepath.Join("/usr/sbin", name); isExecutable(p) {
		return p, nil
	}
	return "", fmt.Errorf("libvirtd: Config.Binary %q: not found on PATH or in /usr/sbin (Debian package libvirt-daemon; run 'make deps')", name)
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

func (d *Daemon) waitReady(ctx context.Context) error {
	sock := d.cfg.Paths().Socket
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			return nil
		}
		select {
		case <-d.done:
			return fmt.Errorf("libvirtd: exited during start-up (%v); %s", d.exit, d.logHint())
		case <-ctx.Done():
			return fmt.Errorf("libvirtd: not ready after %s: %w; %s", time.Since(d.start).Round(time.Millisecond), ctx.Err(), d.logHint())
		case <-tick.C:
		}
	}
}

// logHint names the daemon's logs and quotes their last lines.
func (d *Daemon) logHint() string {
	p := d.cfg.Paths()
	var tail []string
	for _, f := range []string{p.Stderr, p.LogFile} {
		b, err := os.ReadFile(f)
		if err != nil || len(b) == 0 {
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) > 5 {
			lines = lines[len(lines)-5:]
		}
		tail = append(tail, f+": "+strings.Join(lines, " | "))
	}
	if len(tail) == 0 {
		return fmt.Sprintf("logs: %s, %s (empty)", p.Stderr, p.LogFile)
	}
	return "logs: " + strings.Join(tail, "; ")
}

// Config returns the configuration the daemon runs with, defaults applied.
func (d *Daemon) Config() Config { return d.cfg }

// URI is the connection URI of the daemon's QEMU driver.
func (d *Daemon) URI() string { return d.cfg.URI() }

// PID is the daemon's process ID.
func (d *Daemon) PID() int { return d.cmd.Process.Pid }

// MountNamespace identifies the daemon's private mount namespace; every
// process it starts (QEMU, helpers) lives in it. The identity holds until
// Stop returns nil: then the namespace ends, and the kernel may give its
// inode to another one. A session daemon has none (0).
func (d *Daemon) MountNamespace() linuxproc.Namespace {
	if d.cfg.Session {
		return 0
	}
	return d.ns
}

// Done is closed when the daemon process has exited.
func (d *Daemon) Done() <-chan struct{} { return d.done }

// Err is the daemon's exit status once Done is closed.
func (d *Daemon) Err() error {
	select {
	case <-d.done:
		return d.exit
	default:
		return nil
	}
}

// Processes lists the live processes of the daemon's namespace: the daemon
// itself and every guest it runs. After a Stop that returned nil there are
// none, and the namespace is no longer looked at. A session daemon's are
// those of its user, in the caller's mount namespace (which it shares),
// that name a path of its folder (its configuration; a guest's private
// folder, where its master key is), other than the caller. The namespace
// tells apart two launchers whose folders have the same path in their
// pods, on a node where pods share the host's process IDs.
func (d *Daemon) Processes() ([]linuxproc.Process, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cfg.Session {
		if d.stopped {
			return nil, nil
		}
		self := os.Getpid()
		// QEMU's command line names its master key, below the
		// configuration folder, which may be outside Dir.
		names, namesConfig := linuxproc.NamesPath(d.cfg.Dir), linuxproc.NamesPath(d.cfg.Paths().Etc)
		inNS := linuxproc.InMountNamespace(d.ns)
		return linuxproc.List(func(p linuxproc.Process, dir string) bool {
			if p.PID == self || !(names(p, dir) || namesConfig(p, dir)) || !inNS(p, dir) {
				return false
			}
			sec, err := linuxproc.SecurityOf(p.PID)
			return err == nil && sec.UID == d.uid
		})
	}
	if d.pin == nil {
		return nil, nil
	}
	return linuxproc.List(linuxproc.InMountNamespace(d.ns))
}

// release lets the namespace go once nothing runs in it.
func (d *Daemon) release() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stopped = true
	if d.pin != nil {
		_ = d.pin.Close()
		d.pin = nil
	}
}

// Stop ends the daemon and everything in its namespace: guests get SIGTERM
// (QEMU then exits at once; shut a guest down through libvirt first to give it
// a graceful end), then the daemon; whatever is still alive when ctx is done
// gets SIGKILL. It returns an error listing any process that survived.
func (d *Daemon) Stop(ctx context.Context) error {
	signalAll(d, syscall.SIGTERM)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		procs, err := d.Processes()
		select {
		case <-d.done:
		default:
			procs = append(procs, linuxproc.Process{PID: d.PID(), Comm: "libvirtd"})
		}
		if err == nil && len(procs) == 0 {
			d.release()
			d.log.V(1).Info("libvirtd stopped", "dir", d.cfg.Dir)
			return nil
		}
		select {
		case <-ctx.Done():
			signalAll(d, syscall.SIGKILL)
			return d.waitGone(5 * time.Second)
		case <-tick.C:
		}
	}
}

func (d *Daemon) waitGone(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		procs, err := d.Processes()
		if err != nil {
			return fmt.Errorf("libvirtd: stop %s: %w", d.cfg.Dir, err)
		}
		if len(procs) == 0 {
			select {
			case <-d.done:
				d.release()
				return nil
			case <-time.After(time.Until(deadline)):
			}
		}
		if time.Now().After(deadline) {
			var names []string
			for _, p := range procs {
				names = append(names, p.String())
			}
			return fmt.Errorf("libvirtd: stop %s: still alive after SIGKILL: %s", d.cfg.Dir, strings.Join(names, "; "))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// signalAll sends sig to every process in the daemon's namespace, guests
// first, and to the daemon.
func signalAll(d *Daemon, sig syscall.Signal) {
	procs, _ := d.Processes()
	for _, p := range procs {
		if p.PID != d.PID() {
			_ = syscall.Kill(p.PID, sig)
		}
	}
	select {
	case <-d.done:
	default:
		_ = d.cmd.Process.Signal(sig)
	}
}

// sessionEnv is a session daemon's environment: libvirt keeps its
// configuration, state and domains below $XDG_CONFIG_HOME, its runtime
// files below $XDG_RUNTIME_DIR and QEMU's capabilities and logs below
// $XDG_CACHE_HOME, all in the instance folder (the configuration in
// Config.ConfigDir when set).
func sessionEnv(cfg Config) []string {
	p := cfg.Paths()
	return []string{"HOME=" + cfg.Dir, "XDG_CONFIG_HOME=" + p.Etc, "XDG_RUNTIME_DIR=" + p.Runtime, "XDG_CACHE_HOME=" + p.Cache}
}

// session prepares a session daemon's folders: libvirt's configuration
// folder, and with Config.CacheDir the shared capability cache, linked
// where the daemon keeps it ($XDG_CACHE_HOME/libvirt/qemu/cache).
func session(cfg Config) error {
	p := cfg.Paths()
	if err := os.MkdirAll(filepath.Join(p.Etc, "libvirt"), 0o750); err != nil {
		return fmt.Errorf("libvirtd: %w", err)
	}
	if err := swtpmSetup(p); err != nil {
		return err
	}
	if cfg.CacheDir == "" {
		return nil
	}
	qemu := filepath.Join(p.Cache, "libvirt", "qemu")
	if err := os.MkdirAll(qemu, 0o750); err != nil {
		return fmt.Errorf("libvirtd: %w", err)
	}
	link := filepath.Join(qemu, "cache")
	if err := os.Remove(link); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("libvirtd: shared cache: %w", err)
	}
	if err := os.Symlink(cfg.CacheDir, link); err != nil {
		return fmt.Errorf("libvirtd: shared cache: %w", err)
	}
	return nil
}

// swtpmSetup points a session daemon's swtpm_setup, which authors each
// vTPM's state and runs as the daemon's user, at a local CA of its own in
// p.SwtpmLocalCA: the host's (/var/lib/swtpm-localca) is root's. swtpm_setup
// and swtpm_localca read these files from $XDG_CONFIG_HOME, which libvirt
// passes on.
func swtpmSetup(p Paths) error {
	if err := os.MkdirAll(p.SwtpmLocalCA, 0o750); err != nil {
		return fmt.Errorf("libvirtd: swtpm local CA: %w", err)
	}
	files := map[string][]byte{
		"swtpm_setup.conf":   RenderSwtpmSetupConf(p),
		"swtpm-localca.conf": RenderSwtpmLocalCAConf(p),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(p.Etc, name), b, 0o640); err != nil {
			return fmt.Errorf("libvirtd: write %s: %w", name, err)
		}
	}
	return nil
}

// giveTo makes the instance folder dir and all in it o's, never following a
// link, so that a daemon started as o may write there.
func giveTo(dir string, o Owner) error {
	return filepath.WalkDir(dir, func(path string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(path, o.UID, o.GID); err != nil {
			return fmt.Errorf("libvirtd: giving %s to uid %d: %w", path, o.UID, err)
		}
		return nil
	})
}
