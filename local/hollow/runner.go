package hollow

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/virtkit/virtkit/local/node"
	"github.com/virtkit/virtkit/virt/launcher/contract"
)

// runner is the hollow node.ProcessRunner: launchers run in this process,
// anything else is a process that waits to be stopped.
type runner struct{ n *Node }

var _ node.ProcessRunner = runner{}

// killWait bounds how long Kill waits for a launcher to end.
const killWait = 10 * time.Second

// Start implements node.ProcessRunner.
func (r runner) Start(ctx context.Context, spec node.ProcessSpec) (node.Process, error) {
	n := r.n
	n.mu.Lock()
	pid := n.nextPID
	n.nextPID++
	n.mu.Unlock()
	p := &process{ref: node.ProcessRef{PID: pid, StartTime: 1}, mounts: spec.Mounts,
		root: filepath.Join(spec.Scratch, "hollow-root"), done: make(chan struct{})}
	if err := mirror(p.root, spec.Mounts); err != nil {
		return nil, err
	}
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p.stop = cancel
	if filepath.Base(spec.Path) == contract.Binary {
		run, err := n.launcher(p, spec.Args)
		if err != nil {
			cancel()
			return nil, err
		}
		n.track(p)
		n.goLabelled(lctx, func(ctx context.Context) {
			code := run(ctx)
			p.exit(code)
			n.untrack(p)
		})
		return p, nil
	}
	// Any other container: it runs until stopped, and a stop ends it cleanly.
	n.track(p)
	n.goLabelled(lctx, func(ctx context.Context) {
		<-ctx.Done()
		p.exit(0)
		n.untrack(p)
	})
	return p, nil
}

// Exec implements node.ProcessRunner: `test -f PATH`, the launcher's
// readiness probe, is answered from the pod's files; any other command
// does not exist on a hollow node.
func (r runner) Exec(_ context.Context, pr node.Process, argv []string) (int, []byte, error) {
	p, ok := pr.(*process)
	if !ok {
		return 0, nil, fmt.Errorf("hollow: Exec: %T is not a hollow process", pr)
	}
	if len(argv) == 3 && argv[0] == "test" && argv[1] == "-f" {
		host, err := hostPath(p.mounts, argv[2])
		if err != nil {
			return 1, nil, nil
		}
		if st, err := os.Lstat(host); err == nil && st.Mode().IsRegular() {
			return 0, nil, nil
		}
		return 1, nil, nil
	}
	return 127, []byte(fmt.Sprintf("hollow node: %q: no such command (hollow nodes answer only test -f)\n", argv)), nil
}

// Kill implements node.ProcessRunner: a launcher destroys its domain and
// ends as if killed (137); a gone process is no error.
func (r runner) Kill(_ context.Context, ref node.ProcessRef) error {
	r.n.mu.Lock()
	p := r.n.procs[ref.PID]
	r.n.mu.Unlock()
	if p == nil || p.ref != ref {
		return nil
	}
	p.kill()
	select {
	case <-p.done:
		return nil
	case <-time.After(killWait):
		return fmt.Errorf("hollow: process %d did not end within %s of its kill", ref.PID, killWait)
	}
}

// Reap implements node.ProcessRunner: a hollow pod leaves no process.
func (runner) Reap(context.Context, string) error { return nil }

func (n *Node) track(p *process) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.procs[p.ref.PID] = p
}

func (n *Node) untrack(p *process) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.procs, p.ref.PID)
}

// process is a hollow container process.
type process struct {
	ref    node.ProcessRef
	root   string
	mounts []node.Mount
	// stop asks the process to end (SIGTERM).
	stop context.CancelFunc

	mu     sync.Mutex
	killed bool
	// onKill ends what a launcher runs at once (its domain).
	onKill func()
	status node.ExitStatus
	done   chan struct{}
}

var _ node.Process = (*process)(nil)

func (p *process) Ref() node.ProcessRef { return p.ref }

func (p *process) Wait() node.ExitStatus {
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.status
}

// Signal implements node.Process: SIGTERM and SIGINT ask for a stop,
// SIGKILL kills; other signals are ignored.
func (p *process) Signal(sig os.Signal) error {
	switch sig {
	case syscall.SIGTERM, syscall.SIGINT:
		p.stop()
	case syscall.SIGKILL:
		p.kill()
	}
	return nil
}

func (p *process) Root() string { return p.root }

func (p *process) kill() {
	p.mu.Lock()
	p.killed = true
	onKill := p.onKill
	p.mu.Unlock()
	if onKill != nil {
		onKill()
	}
	p.stop()
}

// exit records how the process ended: code, or 137 when it was killed.
func (p *process) exit(code int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.status = node.ExitStatus{Code: code}
	if p.killed {
		p.status = node.ExitStatus{Code: 128 + int(syscall.SIGKILL), Signal: int(syscall.SIGKILL)}
	}
	close(p.done)
}

var errNoMount = errors.New("no volume is mounted there")
