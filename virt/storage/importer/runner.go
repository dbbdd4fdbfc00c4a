package importer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Runner runs a program to its end; the Importer runs qemu-img through it.
type Runner interface {
	// Run runs cmd and returns what it wrote to stdout. A program that
	// fails is an error that carries (the end of) its stderr; one that
	// cannot be started at all (not installed) is an error wrapping
	// ErrCannotRun, which Import returns as it is rather than blame the
	// image.
	Run(ctx context.Context, cmd Command) (stdout []byte, err error)
}

// ErrCannotRun: a program could not be started.
var ErrCannotRun = errors.New("cannot run the program")

// Command is a program to run.
type Command struct {
	// Path is the program, a path or a name looked up in PATH.
	Path string
	Args []string
	// Files are open files the program inherits as descriptors 3, 4, ...
	// (exec.Cmd.ExtraFiles): the Importer hands qemu-img the scratch file
	// and the target it opened (named FilePath(i) in Args), so that no path
	// is looked up twice.
	Files []*os.File
	// Limits, when set, bound the program's resources (on Linux).
	Limits *Limits
}

// Limits are resource limits of a program, as CDI puts on qemu-img when it
// reads an image it does not trust: a crafted header must not make it eat
// the node's memory or CPU.
type Limits struct {
	// AddressSpace is RLIMIT_AS in bytes; 0: unlimited.
	AddressSpace uint64
	// CPUSeconds is RLIMIT_CPU; 0: unlimited.
	CPUSeconds uint64
}

// InfoLimits are CDI's limits on `qemu-img info`: 1 GiB of address space
// and 30 s of CPU.
var InfoLimits = Limits{AddressSpace: 1 << 30, CPUSeconds: 30}

// FilePath names Command.Files[i] in the program: /dev/fd/(3+i).
func FilePath(i int) string { return "/dev/fd/" + strconv.Itoa(3+i) }

func (c Command) String() string { return strings.Join(append([]string{c.Path}, c.Args...), " ") }

// ExecRunner runs programs with os/exec, killing them when the context
// ends. It keeps at most 1 MiB of stdout and 4 KiB of stderr.
type ExecRunner struct{}

var _ Runner = ExecRunner{}

const (
	maxStdout = 1 << 20
	maxStderr = 4 << 10
)

// Run runs cmd.
func (ExecRunner) Run(ctx context.Context, cmd Command) ([]byte, error) {
	c := exec.CommandContext(ctx, cmd.Path, cmd.Args...)
	c.ExtraFiles = cmd.Files
	// Messages in English, to be read by people and by convert's
	// classification.
	c.Env = append(os.Environ(), "LC_ALL=C")
	c.WaitDelay = 10 * time.Second
	stdout := &capped{max: maxStdout}
	stderr := &capped{max: maxStderr, keepEnd: true}
	c.Stdout, c.Stderr = stdout, stderr
	err := c.Start()
	if err == nil && cmd.Limits != nil {
		// Set as soon as it runs, before it has read much of anything.
		if lerr := setLimits(c.Process.Pid, *cmd.Limits); lerr != nil {
			_ = c.Process.Kill()
			_ = c.Wait()
			return nil, fmt.Errorf("%w: %s: limiting its resources: %w", ErrCannotRun, cmd, lerr)
		}
	}
	if err == nil {
		err = c.Wait()
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("%s: %w", cmd, ctx.Err())
	}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return nil, fmt.Errorf("%w: %s: %w", ErrCannotRun, cmd, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %s", cmd, err, bytes.TrimSpace(stderr.b))
	}
	if stdout.over {
		return nil, fmt.Errorf("%s: more than %d bytes of output", cmd, maxStdout)
	}
	return stdout.b, nil
}

// capped keeps the first (or last) max bytes written to it.
type capped struct {
	b       []byte
	max     int
	keepEnd bool
	over    bool
}

func (c *capped) Write(p []byte) (int, error) {
	c.b = append(c.b, p...)
	if len(c.b) > c.max {
		c.over = true
		if c.keepEnd {
			c.b = append(c.b[:0], c.b[len(c.b)-c.max:]...)
		} else {
			c.b = c.b[:c.max]
		}
	}
	return len(p), nil
}
