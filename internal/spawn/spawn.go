// Package spawn starts child processes from one OS thread that lives as
// long as the Spawner. A child's parent-death signal (Pdeathsig) fires when
// the *thread* that forked it ends, not the process; packages that lock
// threads to enter network namespaces let such threads die, so a child
// forked from an arbitrary thread could be killed at random.
package spawn

import (
	"os/exec"
	"runtime"
)

// Spawner starts processes from its own locked thread.
type Spawner struct{ reqs chan req }

type req struct {
	cmd  *exec.Cmd
	errc chan error
}

// New starts a Spawner's thread.
func New() *Spawner {
	s := &Spawner{reqs: make(chan req)}
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		for r := range s.reqs {
			r.errc <- r.cmd.Start()
		}
	}()
	return s
}

// Start starts cmd (cmd.Start) from the Spawner's thread.
func (s *Spawner) Start(cmd *exec.Cmd) error {
	errc := make(chan error, 1)
	s.reqs <- req{cmd: cmd, errc: errc}
	return <-errc
}

// Close ends the Spawner's goroutine. Stop the processes it started first:
// whether its thread then ends (and their parent-death signal fires) is the
// Go runtime's choice. The signal is for when this process dies.
func (s *Spawner) Close() { close(s.reqs) }
