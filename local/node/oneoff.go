package node

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
)

// What of a one-off process's output an error quotes: its last lines, at
// most so many bytes.
const (
	oneOffLogLines = 20
	oneOffLogLimit = 4 << 10
)

// OneOff is a process a node's owner runs to its end outside any pod, as a
// local node runs a container: as User, with the node's accounts plus a
// line for User's user and group where they lack one, Mounts bound in its
// own mount view, the host's network, BinDirs first on PATH.
type OneOff struct {
	// Path is the executable's host path; Args follow it in argv.
	Path string
	Args []string
	// User is who it runs as; nil: root, as the node.
	User    *Identity
	Mounts  []Mount
	BinDirs []string
}

// RunOneOff runs o through runner until it ends and returns an error, with
// the end of its output, when it ends with another code than 0. When ctx
// ends first, the process is killed and ctx's error returned.
func RunOneOff(ctx context.Context, runner ProcessRunner, o OneOff) error {
	scratch, err := os.MkdirTemp("", "vkl-oneoff-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	accounts, err := accountMounts(o.User, nodePasswd, nodeGroup, scratch)
	if err != nil {
		return fmt.Errorf("node: %s: %w", o.Path, err)
	}
	logPath := filepath.Join(scratch, "log")
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer log.Close()
	p, err := runner.Start(ctx, ProcessSpec{
		Path: o.Path, Args: append([]string{o.Path}, o.Args...),
		Env:    containerEnv(&corev1.Container{}, filepath.Base(o.Path), o.BinDirs, nil),
		Mounts: append(accounts, o.Mounts...), Scratch: scratch, Log: log, User: o.User,
	})
	if err != nil {
		return fmt.Errorf("node: %s: %w", o.Path, err)
	}
	ended := make(chan ExitStatus, 1)
	go func() { ended <- p.Wait() }()
	select {
	case st := <-ended:
		if st.Code != 0 {
			return fmt.Errorf("node: %s ended with code %d: %s", o.Path, st.Code, bytes.TrimSpace(logTail(logPath, oneOffLogLines, oneOffLogLimit)))
		}
		return nil
	case <-ctx.Done():
		_ = runner.Kill(context.WithoutCancel(ctx), p.Ref())
		<-ended
		return fmt.Errorf("node: %s: %w", o.Path, ctx.Err())
	}
}
