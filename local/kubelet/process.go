package kubelet

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/virtkit/virtkit/internal/spawn"
)

// daemon is containerd or the kubelet, a child in its own process group
// that gets SIGTERM when the node's spawner thread ends.
type daemon struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

func startDaemon(sp *spawn.Spawner, name, logFile string, env []string, bin string, args ...string) (*daemon, error) {
	log, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	defer log.Close()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = env
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := sp.Start(cmd); err != nil {
		return nil, fmt.Errorf("%s: start %s: %w", name, bin, err)
	}
	d := &daemon{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		d.err = cmd.Wait()
		close(d.done)
	}()
	return d, nil
}

// exited reports whether the daemon ended, and how.
func (d *daemon) exited() (bool, error) {
	select {
	case <-d.done:
		return true, d.err
	default:
		return false, nil
	}
}

// stop sends SIGTERM, then SIGKILL to the process group after grace.
func (d *daemon) stop(grace time.Duration) error {
	if d == nil {
		return nil
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(grace):
		_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
		<-d.done
	}
	// The group may keep children (the kubelet's mount helpers); end them.
	_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
	var ee *exec.ExitError
	if d.err != nil && !errors.As(d.err, &ee) {
		return fmt.Errorf("%s: %w", d.name, d.err)
	}
	return nil
}
