package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
)

// command is one virtctl command.
type command struct {
	name    string
	use     string // the arguments, as in "start (VM)"
	short   string
	example string
	args    int // how many positional arguments it takes
	// moreArgs: args is the least number, more may follow.
	moreArgs bool
	// setup defines the command's flags on fs and returns what runs it once
	// they are parsed.
	setup func(fs *pflag.FlagSet) action
	// subs are the commands named by the first argument (create vm, create
	// instancetype...), each with flags of its own. A command with subs and
	// no setup needs one; with a setup too (vnc) it runs itself unless its
	// first argument names a sub.
	subs []command
}

// sub returns the command of c that the argument word names.
func (c command) sub(word string) (command, bool) {
	for _, s := range c.subs {
		if s.name == c.name+" "+word {
			return s, true
		}
	}
	return command{}, false
}

// action runs a parsed command with its positional arguments.
type action func(ctx context.Context, s *session, args []string) error

// commands are virtctl's commands, in the order help lists them.
func commands() []command {
	return []command{
		startCommand(), stopCommand(), restartCommand(),
		pauseCommand(), unpauseCommand(), softRebootCommand(), resetCommand(),
		migrateCommand(), migrateCancelCommand(), evacuateCancelCommand(),
		consoleCommand(), vncCommand(), portForwardCommand(), sshCommand(), scpCommand(), exposeCommand(),
		guestOSInfoCommand(), userListCommand(), fsListCommand(),
		addVolumeCommand(), removeVolumeCommand(),
		imageUploadCommand(), vmexportCommand(), createCommand(), expandCommand(), versionCommand(),
	}
}

func findCommand(name string) (command, bool) {
	for _, c := range commands() {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// usageError is a command line virtctl cannot parse.
type usageError struct {
	cmd string
	err error
}

func (e *usageError) Error() string {
	see := "virtctl help"
	if e.cmd != "" {
		see = "virtctl " + e.cmd + " --help"
	}
	return fmt.Sprintf("%v\nSee '%s' for usage.", e.err, see)
}

func (e *usageError) Unwrap() error { return e.err }

// run runs one virtctl invocation and returns its exit code: 0, or 1 after
// printing the error.
func run(ctx context.Context, args []string, d deps) int {
	s := &session{deps: d}
	if err := dispatch(ctx, s, args); err != nil {
		var exit *exitError
		if errors.As(err, &exit) {
			return exit.code // the client it ran said why
		}
		fmt.Fprintf(d.stderr, "Error: %v\n", err)
		return 1
	}
	return 0
}

// dispatch parses the global flags up to the command name, then the
// command's flags (the global ones are valid there too, as with kubectl)
// and runs it.
func dispatch(ctx context.Context, s *session, args []string) error {
	global := pflag.NewFlagSet("virtctl", pflag.ContinueOnError)
	global.SetOutput(io.Discard)
	global.SetInterspersed(false)
	s.g.bind(global)
	if err := global.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			printUsage(s.stdout)
			return nil
		}
		return &usageError{err: err}
	}
	rest := global.Args()
	if len(rest) == 0 {
		printUsage(s.stdout)
		return nil
	}
	switch rest[0] {
	case "help":
		if len(rest) > 1 {
			if c, ok := findCommand(rest[1]); ok {
				printCommandUsage(s.stdout, c)
				return nil
			}
		}
		printUsage(s.stdout)
		return nil
	case "options":
		fmt.Fprintf(s.stdout, "The following options can be passed to any command:\n\n%s", global.FlagUsages())
		return nil
	}
	c, ok := findCommand(rest[0])
	if !ok {
		return &usageError{err: fmt.Errorf("unknown command %q", rest[0])}
	}
	// The global flags before the command were parsed already; parsing them
	// again with the command's is harmless and keeps one code path.
	before := args[:len(args)-len(rest)]
	if sub, ok := c.sub(argAt(rest, 1)); ok && c.setup != nil {
		// A command that runs by itself and has subcommands (vnc, vnc
		// screenshot): the sub when named.
		c, rest = sub, rest[1:]
	} else if c.subs != nil && c.setup == nil {
		if len(rest) < 2 || strings.HasPrefix(rest[1], "-") {
			if len(rest) > 1 && (rest[1] == "--help" || rest[1] == "-h") {
				printCommandUsage(s.stdout, c)
				return nil
			}
			return &usageError{cmd: c.name, err: fmt.Errorf("'virtctl %s' needs what to create: %s", c.name, subNames(c))}
		}
		sub, ok := c.sub(rest[1])
		if !ok {
			return &usageError{cmd: c.name, err: fmt.Errorf("unknown resource %q: virtctl %s makes %s manifests", rest[1], c.name, subNames(c))}
		}
		c, rest = sub, rest[1:]
	}
	fs := pflag.NewFlagSet("virtctl "+c.name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	act := c.setup(fs)
	fs.AddFlagSet(global)
	cmdArgs := append(append([]string{}, before...), rest[1:]...)
	if err := fs.Parse(cmdArgs); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			printCommandUsage(s.stdout, c)
			return nil
		}
		return &usageError{cmd: c.name, err: err}
	}
	if n := fs.NArg(); n != c.args && !(c.moreArgs && n > c.args) {
		got := fmt.Sprint(n)
		if n > 0 {
			got += ": " + strings.Join(fs.Args(), " ")
		}
		want := fmt.Sprint(c.args)
		if c.moreArgs {
			want = "at least " + want
		}
		return &usageError{cmd: c.name, err: fmt.Errorf("wrong number of arguments: 'virtctl %s' takes %s, got %s", c.use, want, got)}
	}
	return act(ctx, s, fs.Args())
}

// argAt is args[i], or "" past its end.
func argAt(args []string, i int) string {
	if i < len(args) {
		return args[i]
	}
	return ""
}

func printUsage(w io.Writer) {
	var b strings.Builder
	b.WriteString("virtctl controls KubeVirt virtual machines (on virtkit or KubeVirt) through the\n" +
		"subresources.kubevirt.io API, as KubeVirt's virtctl does.\n\n" +
		"Usage:\n  virtctl [options] COMMAND [flags] ARGS\n\nCommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(&b, "  %-15s %s\n", c.name, c.short)
	}
	b.WriteString("  options         Print the options every command takes (--kubeconfig, -n, --context, ...).\n" +
		"\nUse 'virtctl COMMAND --help' for a command's flags and examples.\n")
	fmt.Fprint(w, b.String())
}

// subNames lists the words that name c's subcommands: "vm, instancetype or
// preference".
func subNames(c command) string {
	var words []string
	for _, s := range c.subs {
		words = append(words, strings.TrimPrefix(s.name, c.name+" "))
	}
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

func printCommandUsage(w io.Writer, c command) {
	if c.subs != nil {
		fmt.Fprintf(w, "%s\n\nUsage:\n  virtctl %s [flags]\n\nCommands:\n", c.short, c.use)
		for _, s := range c.subs {
			fmt.Fprintf(w, "  %-22s %s\n", s.name, s.short)
		}
		fmt.Fprintf(w, "\nUse 'virtctl %s RESOURCE --help' for its flags and examples.\n", c.name)
		return
	}
	fs := pflag.NewFlagSet(c.name, pflag.ContinueOnError)
	c.setup(fs)
	fmt.Fprintf(w, "%s\n\nUsage:\n  virtctl %s [flags]\n", c.short, c.use)
	if c.example != "" {
		fmt.Fprintf(w, "\nExamples:\n%s\n", c.example)
	}
	if fs.HasFlags() {
		fmt.Fprintf(w, "\nFlags:\n%s", fs.FlagUsages())
	}
	fmt.Fprint(w, "\nUse 'virtctl options' for the options every command takes (--kubeconfig, -n, --context, ...).\n")
}
