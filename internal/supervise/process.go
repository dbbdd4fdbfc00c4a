package supervise

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"

	"github.com/virtkit/virtkit/internal/spawn"
)

// Config is one supervised program.
type Config struct {
	// Name names the process in logs and errors (required).
	Name string
	// Path is the program (required); Args its arguments.
	Path string
	Args []string
	// Env is the program's environment; nil inherits this process's.
	Env []string
	// LogFile receives the program's standard output and error, appended
	// (required). Its folder is created.
	LogFile string
	// Spawner starts the program (required): see package spawn.
	Spawner *spawn.Spawner
	// Logger receives exits and restarts; default none.
	Logger logr.Logger
	// MinPause and MaxPause bound the pause before a restart, which
	// doubles from MinPause at each restart; defaults 1 s and 30 s.
	MinPause, MaxPause time.Duration
}

// Process supervises one program. New makes one; Start runs it once;
// Supervise keeps it running; Stop ends it.
type Process struct {
	cfg Config
	log logr.Logger

	mu       sync.Mutex
	cmd      *exec.Cmd
	exited   chan struct{} // closed when cmd has been waited for
	stopping bool
	restarts int
}

// New checks cfg and returns its Process, not started.
func New(cfg Config) (*Process, error) {
	switch {
	case cfg.Name == "":
		return nil, errors.New("supervise: Config.Name: required")
	case cfg.Path == "":
		return nil, fmt.Errorf("supervise: %s: Config.Path: required", cfg.Name)
	case cfg.LogFile == "":
		return nil, fmt.Errorf("supervise: %s: Config.LogFile: required", cfg.Name)
	case cfg.Spawner == nil:
		return nil, fmt.Errorf("supervise: %s: Config.Spawner: required", cfg.Name)
	}
	if cfg.MinPause <= 0 {
		cfg.MinPause = time.Second
	}
	if cfg.MaxPause < cfg.MinPause {
		cfg.MaxPause = max(cfg.MinPause, 30*time.Second)
	}
	log := cfg.Logger
	if log.GetSink() == nil {
		log = logr.Discard()
	}
	return &Process{cfg: cfg, log: log.WithValues("process", cfg.Name)}, nil
}

// Name is Config.Name.
func (p *Process) Name() string { return p.cfg.Name }

// LogFile is Config.LogFile.
func (p *Process) LogFile() string { return p.cfg.LogFile }

// Start starts the program once; Supervise keeps it running.
func (p *Process) Start() error {
	if err := os.MkdirAll(filepath.Dir(p.cfg.LogFile), 0o755); err != nil {
		return fmt.Errorf("supervise: %s: %w", p.cfg.Name, err)
	}
	out, err := os.OpenFile(p.cfg.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return fmt.Errorf("supervise: %s: %w", p.cfg.Name, err)
	}
	cmd := exec.Command(p.cfg.Path, p.cfg.Args...)
	cmd.Env = p.cfg.Env
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group, and gone with us if we die without stopping it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := p.cfg.Spawner.Start(cmd); err != nil {
		out.Close()
		return fmt.Errorf("supervise: start %s (%s): %w", p.cfg.Name, p.cfg.Path, err)
	}
	exited := make(chan struct{})
	p.mu.Lock()
	p.cmd, p.exited = cmd, exited
	stopped := p.stopping
	p.mu.Unlock()
	if stopped { // Stop ran while this one started: it must not outlive it
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	go func() {
		err := cmd.Wait()
		out.Close()
		p.mu.Lock()
		stopping := p.stopping
		p.mu.Unlock()
		if !stopping {
			p.log.Info("exited", "error", fmt.Sprint(err), "log", p.cfg.LogFile, "last lines", Tail(p.cfg.LogFile, 3))
		}
		close(exited)
	}()
	return nil
}

// Supervise starts the program again whenever it exits, after a pause
// that grows from MinPause to MaxPause, until ctx ends or Stop is called.
// Run it in a goroutine after Start.
func (p *Process) Supervise(ctx context.Context) {
	pause := p.cfg.MinPause
	for {
		p.mu.Lock()
		exited := p.exited
		p.mu.Unlock()
		if exited == nil {
			return // never started
		}
		select {
		case <-ctx.Done():
			return
		case <-exited:
		}
		if p.isStopping() {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		if p.isStopping() {
			return
		}
		pause = min(2*pause, p.cfg.MaxPause)
		p.mu.Lock()
		p.restarts++
		p.mu.Unlock()
		if err := p.Start(); err != nil {
			p.log.Error(err, "restart failed")
		} else {
			p.log.Info("restarted")
		}
	}
}

func (p *Process) isStopping() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stopping
}

// Stop ends the program for good: SIGTERM to its process group, then
// SIGKILL after grace. It returns once the program has exited.
func (p *Process) Stop(grace time.Duration) error {
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
		return fmt.Errorf("supervise: %s did not stop within %s; killed", p.cfg.Name, grace)
	case <-time.After(10 * time.Second):
		return fmt.Errorf("supervise: %s survived SIGKILL", p.cfg.Name)
	}
}

// Status is a Process's state at one moment.
type Status struct {
	// PID is the running program's process ID; 0 when none runs.
	PID int
	// Running tells whether the program runs now.
	Running bool
	// Restarts counts the starts after the first.
	Restarts int
}

// Status reports the program's state now.
func (p *Process) Status() Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := Status{Restarts: p.restarts}
	if p.exited == nil {
		return s
	}
	select {
	case <-p.exited:
	default:
		s.Running, s.PID = true, p.cmd.Process.Pid
	}
	return s
}

// tailBytes bounds what Tail reads of a file's end.
const tailBytes = 64 << 10

// Tail returns the last n lines of the file at path (of its last 64 KiB),
// for error messages; an error reading it is returned as the text.
func Tail(path string, n int) string {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > tailBytes {
		if _, err := f.Seek(st.Size()-tailBytes, io.SeekStart); err != nil {
			return err.Error()
		}
	}
	b, err := io.ReadAll(io.LimitReader(f, tailBytes))
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
