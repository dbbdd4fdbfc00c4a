package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/virtkit/virtkit/internal/spawn"
)

// HostRunner is the ProcessRunner that runs containers as host processes.
// It re-executes the running program (/proc/self/exe) in a helper mode,
// recognised by this package's init function before main runs: the helper
// starts in a mount namespace of its own with every mount private, detaches
// the namespace files it inherited, bind-mounts the container's mounts at
// their targets (a target whose parent folders are missing on the host gets
// them on a tmpfs laid over its nearest existing ancestor, which is then
// populated with binds of that ancestor's entries, so the host is never
// changed), joins the pod's network namespace, becomes the spec's user
// (its groups, then its user: a process that is not root keeps no
// capability) and executes the command. Nothing else is dropped or
// confined: the process sees the host's devices, /proc and /sys, and one
// that runs as root keeps every capability.
//
// Pod processes die with the node's process (parent-death signal SIGKILL);
// Close ends the ones still running.
type HostRunner struct {
	spawn     *spawn.Spawner
	closeOnce sync.Once

	// pins hold open, by inode, the mount namespace of each process
	// started and not yet killed: while a namespace is held its inode
	// cannot pass to a namespace created later, so Kill finds only its
	// processes by it.
	mu   sync.Mutex
	pins map[uint64]*os.File
}

var _ ProcessRunner = (*HostRunner)(nil)

// NewHostRunner returns a HostRunner; Close it when the node stops.
func NewHostRunner() *HostRunner {
	return &HostRunner{spawn: spawn.New(), pins: map[uint64]*os.File{}}
}

// Close ends the runner's thread: processes it started and that still run
// get SIGKILL. The namespaces it held are let go. Closing again does
// nothing.
func (h *HostRunner) Close() error {
	h.closeOnce.Do(h.spawn.Close)
	h.mu.Lock()
	defer h.mu.Unlock()
	for ino, f := range h.pins {
		f.Close()
		delete(h.pins, ino)
	}
	return nil
}

// pin holds the mount namespace of ref's process open, if that process
// still runs as ref describes and its namespace is ref.MountNS; nil
// otherwise. The check after the open makes sure the namespace held is
// the process's, not that of a later process with a reused PID.
func pin(ref ProcessRef) *os.File {
	if ref.MountNS == 0 {
		return nil
	}
	f, err := os.Open("/proc/" + strconv.Itoa(ref.PID) + "/ns/mnt")
	if err != nil {
		return nil
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil || st.Ino != ref.MountNS || !alive(ref) {
		f.Close()
		return nil
	}
	return f
}

// takePin returns the namespace held for ino since Start and forgets it;
// nil if none is.
func (h *HostRunner) takePin(ino uint64) *os.File {
	h.mu.Lock()
	defer h.mu.Unlock()
	f := h.pins[ino]
	delete(h.pins, ino)
	return f
}

// helperSpec is what the node hands its helper process on fd 3.
type helperSpec struct {
	Path    string    `json:"path"`
	Args    []string  `json:"args"`
	Env     []string  `json:"env"`
	Dir     string    `json:"dir"`
	NetNS   string    `json:"netns,omitempty"`
	Mounts  []Mount   `json:"mounts"`
	Devices []Device  `json:"devices,omitempty"`
	Scratch string    `json:"scratch"`
	User    *Identity `json:"user,omitempty"`
}

// Start implements ProcessRunner.
func (h *HostRunner) Start(ctx context.Context, spec ProcessSpec) (Process, error) {
	if spec.Log == nil {
		return nil, errors.New("node: ProcessSpec.Log: required")
	}
	if len(spec.Args) == 0 {
		spec.Args = []string{spec.Path}
	}
	specR, specW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		specR.Close()
		specW.Close()
		return nil, err
	}
	cmd := exec.Command("/proc/self/exe")
	cmd.Args = []string{helperArg0}
	cmd.Env = []string{helperEnv + "=1"}
	cmd.Dir = "/"
	cmd.Stdout, cmd.Stderr = spec.Log, spec.Log
	cmd.ExtraFiles = []*os.File{specR, statusW} // fds 3 and 4
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid:   true,
		Pdeathsig: syscall.SIGKILL,
		// A mount namespace of its own, by clone: unshare would make every
		// mount private at once, before the helper clones what a
		// HostToContainer volume needs from the node's shared pods folder;
		// the helper makes the rest private itself.
		Cloneflags: syscall.CLONE_NEWNS,
	}
	err = h.spawn.Start(cmd)
	specR.Close()
	statusW.Close()
	if err != nil {
		specW.Close()
		statusR.Close()
		return nil, fmt.Errorf("node: starting the pod helper: %w", err)
	}
	p := &hostProcess{cmd: cmd, exited: make(chan struct{}), user: spec.User}
	go func() {
		_ = cmd.Wait()
		p.status = exitStatusOf(cmd.ProcessState)
		close(p.exited)
	}()
	p.ref.PID = cmd.Process.Pid
	p.ref.StartTime, _ = startTime(p.ref.PID)
	p.ref.MountNS, _ = nsInode("/proc/" + strconv.Itoa(p.ref.PID) + "/ns/mnt")
	if f := pin(p.ref); f != nil {
		h.mu.Lock()
		if old := h.pins[p.ref.MountNS]; old != nil {
			old.Close()
		}
		h.pins[p.ref.MountNS] = f
		h.mu.Unlock()
	}

	_ = json.NewEncoder(specW).Encode(helperSpec{Path: spec.Path, Args: spec.Args, Env: spec.Env, Dir: spec.Dir,
		NetNS: spec.NetNS, Mounts: spec.Mounts, Devices: spec.Devices, Scratch: spec.Scratch, User: spec.User})
	specW.Close()
	verdict := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(statusR)
		statusR.Close()
		verdict <- string(b)
	}()
	var v string
	select {
	case v = <-verdict:
	case <-ctx.Done():
		_ = h.Kill(context.Background(), p.ref)
		<-p.exited
		return nil, ctx.Err()
	}
	if msg, ok := strings.CutPrefix(afterExecLine(v), "error: "); ok || !strings.HasPrefix(v, "exec\n") {
		_ = syscall.Kill(-p.ref.PID, syscall.SIGKILL)
		<-p.exited
		if !ok {
			msg = fmt.Sprintf("the pod helper ended before it ran %s (exit code %d; is this program's node package initialised?)", spec.Path, p.status.Code)
		}
		return nil, errors.New(msg)
	}
	return p, nil
}

// afterExecLine drops the helper's "exec" line, so an error from execve
// itself, reported after it, is found.
func afterExecLine(v string) string {
	return strings.TrimPrefix(v, "exec\n")
}

// Exec implements ProcessRunner with nsenter(1): argv runs in p's mount and
// network namespaces, with its root and working directory, as its user and
// group when this runner started it.
func (h *HostRunner) Exec(ctx context.Context, p Process, argv []string) (int, []byte, error) {
	if len(argv) == 0 {
		return -1, nil, errors.New("node: exec: empty command")
	}
	args := []string{"--target", strconv.Itoa(p.Ref().PID), "--mount", "--net", "--root", "--wd"}
	if hp, ok := p.(*hostProcess); ok && hp.user != nil {
		args = append(args, "--setuid", strconv.FormatUint(uint64(hp.user.UID), 10), "--setgid", strconv.FormatUint(uint64(hp.user.GID), 10))
	}
	args = append(append(args, "--"), argv...)
	cmd := exec.CommandContext(ctx, "nsenter", args...)
	cmd.Env = []string{"PATH=" + defaultPath}
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), out, nil
	}
	if err != nil {
		return -1, out, fmt.Errorf("node: exec %q in pid %d: %w", argv, p.Ref().PID, err)
	}
	return 0, out, nil
}

// Kill implements ProcessRunner. The processes of ref's mount namespace
// are found by its inode only while that inode is certain to be the
// namespace's: held since Start, or held now while ref's process still
// runs. Otherwise (the process is gone and this runner did not start it,
// as after a node restart) the namespace may have ended and its inode
// passed to another, and only Reap, by the pod's network namespace file,
// finds what is left.
func (h *HostRunner) Kill(ctx context.Context, ref ProcessRef) error {
	held := h.takePin(ref.MountNS)
	if held == nil {
		held = pin(ref)
	}
	if held != nil {
		defer held.Close()
	}
	var pids []int
	if alive(ref) {
		_ = syscall.Kill(-ref.PID, syscall.SIGKILL)
		pids = append(pids, ref.PID)
	}
	// Never the node's own mount namespace: that would be every host process.
	if self, _ := nsInode("/proc/self/ns/mnt"); held != nil && ref.MountNS != self {
		pids = append(pids, pidsInNamespace("mnt", ref.MountNS)...)
	}
	return killAndWait(ctx, pids)
}

// Reap implements ProcessRunner.
func (h *HostRunner) Reap(ctx context.Context, netns string) error {
	ino, err := nsInode(netns)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("node: reap %s: %w", netns, err)
	}
	self, _ := nsInode("/proc/self/ns/net")
	if ino == self {
		return nil // not a namespace file (yet): never the host's processes
	}
	return killAndWait(ctx, pidsInNamespace("net", ino))
}

// killAndWait sends SIGKILL to pids and waits until they are gone.
func killAndWait(ctx context.Context, pids []int) error {
	refs := make([]ProcessRef, 0, len(pids))
	for _, pid := range pids {
		st, err := startTime(pid)
		if err != nil {
			continue
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
		refs = append(refs, ProcessRef{PID: pid, StartTime: st})
	}
	for _, r := range refs {
		for alive(r) && !zombie(r.PID) {
			select {
			case <-ctx.Done():
				return fmt.Errorf("node: pid %d survived SIGKILL: %w", r.PID, ctx.Err())
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	return nil
}

// zombie reports whether pid has exited and waits for its parent to reap it.
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && i+2 < len(b) && (b[i+2] == 'Z' || b[i+2] == 'X')
}

// hostProcess is a process HostRunner started.
type hostProcess struct {
	cmd    *exec.Cmd
	ref    ProcessRef
	exited chan struct{}
	status ExitStatus
	user   *Identity
}

func (p *hostProcess) Ref() ProcessRef { return p.ref }

func (p *hostProcess) Wait() ExitStatus {
	<-p.exited
	return p.status
}

func (p *hostProcess) Signal(sig os.Signal) error {
	select {
	case <-p.exited:
		return nil
	default:
	}
	return p.cmd.Process.Signal(sig)
}

func (p *hostProcess) Root() string { return "/proc/" + strconv.Itoa(p.ref.PID) + "/root" }

func exitStatusOf(ps *os.ProcessState) ExitStatus {
	if ps == nil {
		return ExitStatus{Code: -1}
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ExitStatus{Code: 128 + int(ws.Signal()), Signal: int(ws.Signal())}
	}
	return ExitStatus{Code: ps.ExitCode()}
}

// defaultPath is the PATH of containers that set none, and of probes.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
