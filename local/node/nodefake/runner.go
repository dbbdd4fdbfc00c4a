package nodefake

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/virtkit/virtkit/local/node"
)

// Runner is a fake node.ProcessRunner. A started process runs until the
// test calls Exit, or it receives SIGTERM (when ExitOnTerm) or is killed.
type Runner struct {
	// Dir holds each process's Root folder (required).
	Dir string
	// StartErr, when set, is asked before each start; an error fails it.
	StartErr func(spec node.ProcessSpec) error
	// ExecFunc answers Exec; the default fails every command with 1.
	ExecFunc func(p node.Process, argv []string) (int, []byte, error)
	// IgnoreTerm makes processes ignore SIGTERM (they then wait for the
	// kill at the end of the grace period).
	IgnoreTerm bool

	mu      sync.Mutex
	procs   []*Process
	reaped  []string
	killed  []node.ProcessRef
	started chan *Process
}

var _ node.ProcessRunner = (*Runner)(nil)

// NewRunner returns a Runner whose processes' roots live in dir.
func NewRunner(dir string) *Runner {
	return &Runner{Dir: dir, started: make(chan *Process, 100)}
}

// Start implements node.ProcessRunner.
func (r *Runner) Start(_ context.Context, spec node.ProcessSpec) (node.Process, error) {
	if r.StartErr != nil {
		if err := r.StartErr(spec); err != nil {
			return nil, err
		}
	}
	r.mu.Lock()
	pid := 100000 + len(r.procs)
	p := &Process{Spec: spec, ref: node.ProcessRef{PID: pid, StartTime: 1}, runner: r,
		root: filepath.Join(r.Dir, fmt.Sprint(pid)), exited: make(chan struct{})}
	r.procs = append(r.procs, p)
	r.mu.Unlock()
	if err := os.MkdirAll(p.root, 0o755); err != nil {
		return nil, err
	}
	r.started <- p
	return p, nil
}

// Started returns the processes as they start.
func (r *Runner) Started() <-chan *Process { return r.started }

// Processes returns every process started so far.
func (r *Runner) Processes() []*Process {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*Process(nil), r.procs...)
}

// Exec implements node.ProcessRunner.
func (r *Runner) Exec(_ context.Context, p node.Process, argv []string) (int, []byte, error) {
	if r.ExecFunc != nil {
		return r.ExecFunc(p, argv)
	}
	return 1, nil, nil
}

// Kill implements node.ProcessRunner: a running process exits with 137.
func (r *Runner) Kill(_ context.Context, ref node.ProcessRef) error {
	r.mu.Lock()
	r.killed = append(r.killed, ref)
	var target *Process
	for _, p := range r.procs {
		if p.ref == ref {
			target = p
		}
	}
	r.mu.Unlock()
	if target != nil {
		target.exit(node.ExitStatus{Code: 137, Signal: int(syscall.SIGKILL)})
	}
	return nil
}

// Killed returns the processes Kill was called for.
func (r *Runner) Killed() []node.ProcessRef {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]node.ProcessRef(nil), r.killed...)
}

// Reap implements node.ProcessRunner (it only records the namespace).
func (r *Runner) Reap(_ context.Context, netns string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reaped = append(r.reaped, netns)
	return nil
}

// Process is a fake process.
type Process struct {
	// Spec is what it was started with.
	Spec node.ProcessSpec

	runner *Runner
	ref    node.ProcessRef
	root   string

	mu      sync.Mutex
	signals []os.Signal
	status  node.ExitStatus
	done    bool
	exited  chan struct{}
}

// Exit ends the process with code.
func (p *Process) Exit(code int) { p.exit(node.ExitStatus{Code: code}) }

func (p *Process) exit(st node.ExitStatus) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return
	}
	p.done, p.status = true, st
	close(p.exited)
}

// Exited is closed when the process has ended.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Signals returns the signals the process received.
func (p *Process) Signals() []os.Signal {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]os.Signal(nil), p.signals...)
}

// Mount returns the process's mount at target.
func (p *Process) Mount(target string) (node.Mount, error) {
	for _, m := range p.Spec.Mounts {
		if m.Target == target {
			return m, nil
		}
	}
	return node.Mount{}, errors.New("no mount at " + target)
}

func (p *Process) Ref() node.ProcessRef { return p.ref }

func (p *Process) Wait() node.ExitStatus {
	<-p.exited
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.status
}

func (p *Process) Signal(sig os.Signal) error {
	p.mu.Lock()
	p.signals = append(p.signals, sig)
	p.mu.Unlock()
	if sig == syscall.SIGTERM && !p.runner.IgnoreTerm {
		p.exit(node.ExitStatus{Code: 143, Signal: int(syscall.SIGTERM)})
	}
	return nil
}

func (p *Process) Root() string { return p.root }
