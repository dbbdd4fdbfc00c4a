package controlplane

import (
	"os/exec"
	"runtime"
)

// spawner starts processes from one OS thread that lives as long as the
// spawner. A child's Pdeathsig fires when the *thread* that forked it ends,
// not the process; other rooms lock threads to enter network namespaces and
// let such threads die, so a control plane process forked from an arbitrary
// thread could be killed at random.
type spawner struct{ reqs chan spawnReq }

type spawnReq struct {
	cmd  *exec.Cmd
	errc chan error
}

func newSpawner() *spawner {
	s := &spawner{reqs: make(chan spawnReq)}
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the spawner's goroutine
		for r := range s.reqs {
			r.errc <- r.cmd.Start()
		}
	}()
	return s
}

// start starts cmd from the spawner's thread.
func (s *spawner) start(cmd *exec.Cmd) error {
	errc := make(chan error, 1)
	s.reqs <- spawnReq{cmd: cmd, errc: errc}
	return <-errc
}

// close ends the spawner; processes started by it then get their Pdeathsig.
func (s *spawner) close() { close(s.reqs) }
