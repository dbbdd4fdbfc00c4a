package node

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/virtkit/virtkit/internal/testenv"
)

// The host runner's process sees its mounts (at targets the host does not
// have), answers exec probes in its namespaces, and Kill leaves nothing.
func TestHostRunner(t *testing.T) {
	testenv.Integration(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := testenv.Dir(t)
	vol := filepath.Join(dir, "vol")
	if err := os.MkdirAll(vol, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(vol, "x"), []byte("from the volume"), 0o644); err != nil {
		t.Fatal(err)
	}
	log, err := os.Create(filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	h := NewHostRunner()
	defer h.Close()
	p, err := h.Start(ctx, ProcessSpec{Path: "/bin/sh", Args: []string{"sh", "-c", "echo started; exec sleep 1000"},
		Env: []string{"PATH=" + defaultPath, testenv.OwnerEnv + "=" + strconv.Itoa(os.Getpid())}, Dir: "/vkt-no-such-dir/work",
		Mounts:  []Mount{{Source: vol, Target: "/etc/vkt-runner-test/vol", ReadOnly: true}},
		Scratch: filepath.Join(dir, "scratch"), Log: log})
	if err != nil {
		t.Fatal(err)
	}
	code, out, err := h.Exec(ctx, p, []string{"sh", "-c", "cat /etc/vkt-runner-test/vol/x; pwd; touch /etc/vkt-runner-test/vol/y"})
	if err != nil || !strings.HasPrefix(string(out), "from the volume/vkt-no-such-dir/work\n") || code == 0 {
		t.Errorf("exec = %d, %q, %v; want the volume's file, the working directory and a failed write (read-only)", code, out, err)
	}
	if st, err := statIn(p.Root(), "/etc/vkt-runner-test/vol/x"); err != nil || st.Size() != int64(len("from the volume")) {
		t.Errorf("through Root: %v", err)
	}
	for _, host := range []string{"/etc/vkt-runner-test", "/vkt-no-such-dir"} {
		if _, err := os.Stat(host); err == nil {
			t.Errorf("the host got %s", host)
		}
	}
	if err := h.Kill(ctx, p.Ref()); err != nil {
		t.Fatal(err)
	}
	if st := p.Wait(); st.Signal != int(syscall.SIGKILL) || st.Code != 137 {
		t.Errorf("after Kill: %+v", st)
	}
	if b, _ := os.ReadFile(log.Name()); string(b) != "started\n" {
		t.Errorf("log = %q", b)
	}

	// A command that does not exist fails Start with the reason.
	_, err = h.Start(ctx, ProcessSpec{Path: "/vkt-missing", Args: []string{"x"}, Log: log, Scratch: filepath.Join(dir, "scratch")})
	if err == nil || !strings.Contains(err.Error(), "/vkt-missing") {
		t.Errorf("start of a missing executable: %v", err)
	}
}
