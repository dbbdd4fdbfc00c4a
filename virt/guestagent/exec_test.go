package guestagent_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/virtkit/virtkit/virt/guestagent"
)

// execAgent models qemu-ga's guest-exec: the process runs for `polls`
// status calls, then ends as `status` says.
type execAgent struct {
	polls  int
	status string
	got    []string // the commands received, as sent
}

func (a *execAgent) GuestAgentCommand(_ context.Context, _, command string, _ time.Duration) (string, error) {
	a.got = append(a.got, command)
	var req struct {
		Execute string `json:"execute"`
	}
	if err := json.Unmarshal([]byte(command), &req); err != nil {
		return "", err
	}
	switch req.Execute {
	case "guest-exec":
		return `{"return":{"pid":4242}}`, nil
	case "guest-exec-status":
		if a.polls > 0 {
			a.polls--
			return `{"return":{"exited":false}}`, nil
		}
		return a.status, nil
	}
	return "", errors.New("The command " + req.Execute + " has not been found")
}

func TestExec(t *testing.T) {
	for _, tc := range []struct {
		name   string
		polls  int
		status string
		want   guestagent.ExecResult
	}{
		{"exits 0 at once", 0, `{"return":{"exited":true,"exitcode":0}}`, guestagent.ExecResult{ExitCode: 0}},
		{"exits 3 after two polls", 2, `{"return":{"exited":true,"exitcode":3}}`, guestagent.ExecResult{ExitCode: 3}},
		{"killed by a signal", 0, `{"return":{"exited":true,"signal":9}}`, guestagent.ExecResult{ExitCode: -1, Signal: 9}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &execAgent{polls: tc.polls, status: tc.status}
			got, err := guestagent.Exec(context.Background(), a, "ns_vm", "/bin/cat", []string{"/tmp/ready"})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Exec (-want +got):\n%s", diff)
			}
			want := []string{`{"arguments":{"arg":["/tmp/ready"],"path":"/bin/cat"},"execute":"guest-exec"}`}
			for i := 0; i <= tc.polls; i++ {
				want = append(want, `{"arguments":{"pid":4242},"execute":"guest-exec-status"}`)
			}
			if diff := cmp.Diff(want, a.got); diff != "" {
				t.Errorf("commands sent (-want +got):\n%s", diff)
			}
		})
	}
}

func TestExecEnds(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*guestagent.ExecPoll)
	defer cancel()
	_, err := guestagent.Exec(ctx, &execAgent{polls: 1 << 30}, "ns_vm", "/bin/sleep", []string{"1000"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Exec of a process that does not end: %v, want the deadline", err)
	}
	_, err = guestagent.Exec(context.Background(), agent{"guest-exec": `{"return":{}}`}, "ns_vm", "/bin/true", nil)
	if !errors.Is(err, guestagent.ErrReply) {
		t.Errorf("Exec without a pid: %v, want ErrReply", err)
	}
	_, err = guestagent.Exec(context.Background(), qga, "ns_vm", "/bin/true", nil)
	if err == nil {
		t.Error("Exec through an agent without guest-exec: no error")
	}
}
