package main

import (
	"context"
	"io"
	"os"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY returns the two ends of a new pseudo-terminal: what a user types
// is written to master, slave is the program's stdin.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("a console test needs a pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { _ = master.Close() })
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	slave, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = slave.Close() })
	return master, slave
}

// On a terminal the console is raw: Ctrl+C and every other byte reach the
// guest unchanged (no signal, no line editing, no local echo), Ctrl+]
// leaves, and the terminal's mode is restored afterwards.
func TestConsoleRawTerminal(t *testing.T) {
	master, slave := openPTY(t)
	before, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if before.Lflag&unix.ICANON == 0 {
		t.Fatal("a new pseudo-terminal is not in canonical mode")
	}
	h := newHarness(t, "")
	h.api.console = func(int) (io.ReadWriteCloser, error) { return echoConsole(t), nil }
	h.stdin = slave
	done := h.runAsync(context.Background(), "console", "tty")
	waitFor(t, "the connected line", func() bool { return h.stderr.String() != "" })
	// Typed without a newline: a canonical terminal would hold it back.
	if _, err := master.WriteString("ls\x03\x7f"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the echo", func() bool { return h.stdout.String() == "ls\x03\x7f" })
	if _, err := master.WriteString("\x1d"); err != nil {
		t.Fatal(err)
	}
	if code := exitCode(t, done); code != 0 {
		t.Errorf("exit %d; stderr %q", code, h.stderr)
	}
	if want := "Successfully connected to tty console. The escape sequence is ^]\r\n\r\n"; h.stderr.String() != want {
		t.Errorf("stderr %q, want %q", h.stderr, want)
	}
	after, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if *after != *before {
		t.Errorf("terminal mode not restored:\nbefore %+v\nafter  %+v", before, after)
	}
}
