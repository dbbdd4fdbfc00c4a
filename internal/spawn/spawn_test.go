package spawn_test

import (
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/virtkit/virtkit/internal/spawn"
)

// A child with a parent-death signal survives the end of locked threads
// elsewhere in the process.
func TestChildOutlivesOtherThreads(t *testing.T) {
	s := spawn.New()
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.Start(cmd); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	// Threads that lock and end, as netns helpers do.
	for i := 0; i < 20; i++ {
		ended := make(chan struct{})
		go func() { runtime.LockOSThread(); close(ended) }()
		<-ended
	}
	select {
	case err := <-done:
		t.Fatalf("the child died with another thread: %v", err)
	case <-time.After(500 * time.Millisecond):
	}
	_ = cmd.Process.Kill()
	<-done
	s.Close()
}
