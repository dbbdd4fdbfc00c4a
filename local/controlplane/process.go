package controlplane

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"

	"github.com/virtkit/virtkit/internal/spawn"
)

// process supervises one component: it starts it with its output in
// LogDir/<name>.log, restarts it with a growing pause if it dies, and stops
// it with SIGTERM, then SIGKILL after a grace period.
type process struct {
	comp   component
	spawn  *spawn.Spawner
	bin    string
	logDir string
	log    logr.Logger

	mu       sync.Mutex
	cmd      *exec.Cmd
	exited   chan struct{} // closed when cmd has been waited for
	stopping bool
	restarts int
	done     chan struct{} // closed when supervision ends
}

func newProcess(c Config, comp component, sp *spawn.Spawner) *process {
	return &process{comp: comp, spawn: sp, bin: filepath.Join(c.BinDir, comp.name), logDir: c.LogDir(),
		log: c.Logger.WithValues("component", comp.name), done: make(chan struct{})}
}

// start starts the process once; supervise keeps it running.
func (p *process) start() error {
	if err := os.MkdirAll(p.logDir, 0o755); err != nil {
		return fmt.Errorf("controlplane: %s: %w", p.comp.name, err)
	}
	out, err := os.OpenFile(filepath.Join(p.logDir, p.comp.name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("controlplane: %s: %w", p.comp.name, err)
	}
	cmd := exec.Command(p.bin, p.comp.args...)
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group, and gone with us if we die without stopping it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := p.spawn.Start(cmd); err != nil {
		out.Close()
		return fmt.Errorf("controlplane: start %s: %w", p.bin, err)
	}
	exited := make(chan struct{})
	p.mu.Lock()
	p.cmd, p.exited = cmd, exited
	stopped := p.stopping
	p.mu.Unlock()
	if stopped { // stop ran while this one started: it must not outlive it
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	go func() {
		err := cmd.Wait()
		out.Close()
		p.mu.Lock()
		stopping := p.stopping
		p.mu.Unlock()
		if !stopping {
			p.log.Info("exited", "error", fmt.Sprint(err), "log", out.Name(), "last lines", tail(out.Name(), 3))
		}
		close(exited)
	}()
	return nil
}

// supervise restarts the process whenever it exits until ctx ends or stop
// is called. Pauses grow from 1 s to 30 s.
func (p *process) supervise(ctx context.Context) {
	defer close(p.done)
	pause := time.Second
	for {
		p.mu.Lock()
		exited := p.exited
		p.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-exited:
		}
		p.mu.Lock()
		stopping := p.stopping
		p.mu.Unlock()
		if stopping {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		pause = min(2*pause, 30*time.Second)
		p.mu.Lock()
		p.restarts++
		p.mu.Unlock()
		if err := p.start(); err != nil {
			p.log.Error(err, "restart failed")
		} else {
			p.log.Info("restarted")
		}
	}
}

// stop ends the process: SIGTERM, then SIGKILL after grace.
func (p *process) stop(grace time.Duration) error {
	p.mu.Lock()
	p.stopping = true
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if cmd == nil {
		return nil
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-exited:
		return nil
	case <-time.After(grace):
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-exited:
		return fmt.Errorf("controlplane: %s did not stop within %s; killed", p.comp.name, grace)
	case <-time.After(10 * time.Second):
		return errors.New("controlplane: " + p.comp.name + " survived SIGKILL")
	}
}

// alive reports whether the process runs now.
func (p *process) alive() bool {
	p.mu.Lock()
	exited := p.exited
	p.mu.Unlock()
	if exited == nil {
		return false
	}
	select {
	case <-exited:
		return false
	default:
		return true
	}
}
