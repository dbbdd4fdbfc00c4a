package guestagent

import (
	"context"
	"fmt"
	"time"
)

// ExecPoll is how often Exec asks whether the guest's process ended.
const ExecPoll = 100 * time.Millisecond

// ExecResult is how a process the agent started in the guest ended.
type ExecResult struct {
	// ExitCode is the process's exit status; a process killed by a signal
	// has -1 here and the signal in Signal.
	ExitCode int
	// Signal is the signal that ended the process, 0 when it exited.
	Signal int
}

// Exec runs path with args in the guest (guest-exec, as KubeVirt's exec
// probes do) and waits until it ends (guest-exec-status every ExecPoll) or
// ctx ends, whichever comes first. Its output is neither captured nor
// kept: only how it ended comes back. A process still running when ctx
// ends is left to the guest, as qemu-ga offers no way to stop it.
func Exec(ctx context.Context, c Commander, domain, path string, args []string) (ExecResult, error) {
	if args == nil {
		args = []string{}
	}
	var started struct {
		PID *int `json:"pid"`
	}
	if err := call(ctx, c, domain, "guest-exec", map[string]any{"path": path, "arg": args}, &started); err != nil {
		return ExecResult{}, err
	}
	if started.PID == nil {
		return ExecResult{}, fmt.Errorf("guest agent of domain %s: guest-exec: %w: no pid", domain, ErrReply)
	}
	poll := time.NewTimer(0)
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			return ExecResult{}, fmt.Errorf("guest agent of domain %s: %s (pid %d) did not end: %w", domain, text(path), *started.PID, ctx.Err())
		case <-poll.C:
		}
		var st struct {
			Exited   bool `json:"exited"`
			ExitCode *int `json:"exitcode"`
			Signal   *int `json:"signal"`
		}
		if err := call(ctx, c, domain, "guest-exec-status", map[string]any{"pid": *started.PID}, &st); err != nil {
			return ExecResult{}, err
		}
		if st.Exited {
			r := ExecResult{ExitCode: -1}
			if st.ExitCode != nil {
				r.ExitCode = *st.ExitCode
			}
			if st.Signal != nil {
				r.Signal = *st.Signal
			}
			return r, nil
		}
		poll.Reset(ExecPoll)
	}
}
