package supervise_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/virtkit/virtkit/internal/spawn"
	"github.com/virtkit/virtkit/internal/supervise"
)

func newProcess(t *testing.T, script string) *supervise.Process {
	t.Helper()
	sp := spawn.New()
	t.Cleanup(sp.Close)
	p, err := supervise.New(supervise.Config{Name: "sleeper", Path: "/bin/sh", Args: []string{"-c", script},
		LogFile: filepath.Join(t.TempDir(), "logs", "sleeper.log"), Spawner: sp, MinPause: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// waitStatus polls p until ok holds or 10 s pass.
func waitStatus(t *testing.T, p *supervise.Process, what string, ok func(supervise.Status) bool) supervise.Status {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := p.Status()
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: status %+v", what, s)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A killed program comes back under a new PID, counted as a restart, and
// its output goes on into the same log.
func TestRestartsAfterKill(t *testing.T) {
	p := newProcess(t, "echo started; exec sleep 60")
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go p.Supervise(ctx)
	first := waitStatus(t, p, "running", func(s supervise.Status) bool { return s.Running })
	waitLog(t, p, 1)
	if first.Restarts != 0 {
		t.Fatalf("restarts %d before any exit", first.Restarts)
	}
	if err := syscall.Kill(first.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	second := waitStatus(t, p, "restarted", func(s supervise.Status) bool { return s.Running && s.PID != first.PID })
	if second.Restarts != 1 {
		t.Errorf("restarts %d after one kill, want 1", second.Restarts)
	}
	waitLog(t, p, 2)
	if err := p.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if s := p.Status(); s.Running || s.PID != 0 {
		t.Errorf("after Stop: %+v", s)
	}
	if err := syscall.Kill(second.PID, 0); err == nil {
		t.Errorf("PID %d still runs after Stop", second.PID)
	}
}

// waitLog waits until p's log shows n starts of the program.
func waitLog(t *testing.T, p *supervise.Process, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(supervise.Tail(p.LogFile(), 10), "started") < n {
		if time.Now().After(deadline) {
			t.Fatalf("log shows %q, want %d starts; %+v", supervise.Tail(p.LogFile(), 10), n, p.Status())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A program that ignores SIGTERM is killed after the grace period, and Stop
// says so; it is not restarted.
func TestStopEscalates(t *testing.T) {
	p := newProcess(t, "trap '' TERM; echo ready; while :; do sleep 0.05; done")
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go p.Supervise(ctx)
	waitStatus(t, p, "running", func(s supervise.Status) bool { return s.Running })
	for !strings.Contains(supervise.Tail(p.LogFile(), 1), "ready") {
		time.Sleep(10 * time.Millisecond)
	}
	err := p.Stop(200 * time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "did not stop within") {
		t.Fatalf("Stop: %v, want it to report the SIGKILL", err)
	}
	time.Sleep(100 * time.Millisecond)
	if s := p.Status(); s.Running || s.Restarts != 0 {
		t.Errorf("after Stop: %+v, want stopped and never restarted", s)
	}
}

// Tail reads only the end of a large file, and does not follow a symlink.
func TestTail(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.log")
	body := strings.Repeat(strings.Repeat("x", 99)+"\n", 10_000) + "second last\nlast\n"
	if err := os.WriteFile(big, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := supervise.Tail(big, 2); got != "second last\nlast" {
		t.Errorf("Tail = %q", got)
	}
	link := filepath.Join(dir, "link.log")
	if err := os.Symlink(big, link); err != nil {
		t.Fatal(err)
	}
	if got := supervise.Tail(link, 1); got == "last" {
		t.Errorf("Tail followed a symlink: %q", got)
	}
}

func TestNewRefusesIncomplete(t *testing.T) {
	sp := spawn.New()
	defer sp.Close()
	for _, c := range []struct {
		cfg  supervise.Config
		want string
	}{
		{supervise.Config{Path: "/bin/true", LogFile: "x", Spawner: sp}, "Config.Name"},
		{supervise.Config{Name: "a", LogFile: "x", Spawner: sp}, "Config.Path"},
		{supervise.Config{Name: "a", Path: "/bin/true", Spawner: sp}, "Config.LogFile"},
		{supervise.Config{Name: "a", Path: "/bin/true", LogFile: "x"}, "Config.Spawner"},
	} {
		if _, err := supervise.New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v) = %v, want an error naming %s", c.cfg, err, c.want)
		}
	}
}
