package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/term"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// escapeByte leaves the console: Ctrl+], as in KubeVirt's virtctl and telnet.
const escapeByte = 0x1d

func consoleCommand() command {
	return command{name: "console", use: "console (VMI)", short: "Connect to the serial console of a virtual machine.", args: 1,
		example: "  # Connect to the console of 'tiny' (Ctrl+] leaves):\n  virtctl console tiny\n" +
			"  # Wait at most one minute for it to run:\n  virtctl console --timeout=1 tiny\n" +
			"  # Type a line into it from a script, keep printing what it says until Ctrl+C:\n  echo root | virtctl console tiny",
		setup: func(fs *pflag.FlagSet) action {
			timeout := fs.Int("timeout", 5, "Minutes to wait for the virtual machine instance to run and its console to connect.")
			return func(ctx context.Context, s *session, args []string) error {
				if err := s.connect(); err != nil {
					return err
				}
				o := op{"console", kindVMI, args[0]}
				conn, err := s.openStream(ctx, o, time.Duration(*timeout)*time.Minute, s.sub.Console)
				if err != nil || conn == nil {
					return err
				}
				return s.console(ctx, o.name, conn)
			}
		}}
}

// openStream opens a console or VNC stream, waiting up to timeout while the
// VMI is not running yet (or its VM has no VMI yet), as KubeVirt's virtctl
// does. It returns nil, nil when ctx ends first (Ctrl+C).
func (s *session) openStream(ctx context.Context, o op, timeout time.Duration,
	open func(ctx context.Context, namespace, name string) (io.ReadWriteCloser, error)) (io.ReadWriteCloser, error) {
	deadline := time.Now().Add(timeout)
	said := ""
	for {
		conn, err := open(ctx, s.ns, o.name)
		if err == nil {
			return conn, nil
		}
		if ctx.Err() != nil {
			return nil, nil
		}
		why, wait := s.notReady(ctx, o, err)
		if !wait {
			return nil, s.explain(o, err)
		}
		if !time.Now().Before(deadline) {
			return nil, &explained{msg: fmt.Sprintf("cannot open the %s of %s %s/%s: still not ready after %s: %s", o.verb, o.kind, s.ns, o.name, timeout, why),
				hint: fmt.Sprintf("Wait longer with --timeout=MINUTES; `kubectl get vmi %s -n %s -o yaml` shows its phase and conditions.", o.name, s.ns), err: err}
		}
		if why != said {
			fmt.Fprintf(s.stderr, "Waiting for %s %s: %s\n", o.kind, o.name, why)
			said = why
		}
		select {
		case <-ctx.Done():
			return nil, nil
		case <-time.After(s.poll):
		}
	}
}

// notReady reports whether an error opening a stream means "not yet": the
// VMI does not run yet (409 on virtkit, 400 "phase is ..." on KubeVirt),
// its node's handler does not answer yet (503), or its VM exists but has no
// VMI yet. Anything else is final.
func (s *session) notReady(ctx context.Context, o op, err error) (string, bool) {
	st := statusOf(err)
	if st == nil {
		return "", false
	}
	switch {
	case st.Code == http.StatusConflict, st.Code == http.StatusServiceUnavailable,
		st.Code == http.StatusBadRequest && strings.Contains(st.Message, "phase"):
		return st.Message, true
	case st.Code == http.StatusNotFound && st.Details != nil && strings.HasPrefix(strings.ToLower(st.Details.Kind), "virtualmachineinstance"):
		vm := &virtv1.VirtualMachine{}
		if s.kube.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: o.name}, vm) == nil {
			return "its VirtualMachine has no VirtualMachineInstance yet", true
		}
	}
	return "", false
}

// console connects the terminal (or whatever stdin and stdout are) to conn
// until Ctrl+] is typed, the console closes, or ctx ends. A terminal is put
// in raw mode, so every key (Ctrl+C too) goes to the guest; from a pipe or
// file the bytes are sent as they are and, when stdin ends, the console
// keeps printing until it closes or Ctrl+C, as KubeVirt's virtctl does.
func (s *session) console(ctx context.Context, name string, conn io.ReadWriteCloser) error {
	nl := "\n"
	if f, ok := s.stdin.(interface{ Fd() uintptr }); ok && term.IsTerminal(int(f.Fd())) {
		state, err := term.MakeRaw(int(f.Fd()))
		if err != nil {
			_ = conn.Close()
			return fmt.Errorf("making the terminal raw: %w", err)
		}
		defer func() { _ = term.Restore(int(f.Fd()), state) }()
		nl = "\r\n"
	}
	fmt.Fprintf(s.stderr, "Successfully connected to %s console. The escape sequence is ^]%s", name, nl)
	err := pump(ctx, conn, s.stdin, s.stdout)
	fmt.Fprint(s.stderr, nl)
	return err
}

// errEscaped ends a console session on Ctrl+].
var errEscaped = errors.New("escape sequence typed")

// pump copies conn to out and in to conn until the escape byte is read from
// in, conn ends, or ctx ends, then closes conn. The end of in does not end
// the session.
func pump(ctx context.Context, conn io.ReadWriteCloser, in io.Reader, out io.Writer) error {
	fromGuest := make(chan error, 1)
	toGuest := make(chan error, 1)
	go func() {
		_, err := io.Copy(out, conn)
		fromGuest <- err
	}()
	go func() {
		if err := copyUntilEscape(conn, in); err != nil {
			toGuest <- err
		}
	}()
	var err error
	select {
	case <-ctx.Done():
	case err = <-fromGuest:
	case err = <-toGuest:
	}
	_ = conn.Close()
	if errors.Is(err, errEscaped) || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// copyUntilEscape writes what in reads to w up to the escape byte, and
// returns errEscaped there, nil at the end of in, or the first error.
func copyUntilEscape(w io.Writer, in io.Reader) error {
	buf := make([]byte, 1024)
	for {
		n, err := in.Read(buf)
		if n > 0 {
			chunk, escaped := buf[:n], false
			if i := bytes.IndexByte(chunk, escapeByte); i >= 0 {
				chunk, escaped = chunk[:i], true
			}
			if len(chunk) > 0 {
				if _, werr := w.Write(chunk); werr != nil {
					return werr
				}
			}
			if escaped {
				return errEscaped
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
