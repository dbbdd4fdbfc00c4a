package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// sshFlags are the flags ssh and scp share, as KubeVirt's virtctl names them.
type sshFlags struct {
	user     *string
	identity *string
	port     *int
	opts     *[]string
}

func bindSSHFlags(fs *pflag.FlagSet) sshFlags {
	fs.String("known-hosts", "", "Accepted for KubeVirt's virtctl; the local client's own known_hosts applies (pass -t '-o UserKnownHostsFile=...').")
	return sshFlags{
		user:     fs.StringP("username", "l", "", "User to log in as; default: USER@ in the target, else the client's default."),
		identity: fs.StringP("identity-file", "i", "", "Private key to authenticate with; default: the client's (ssh-agent, ~/.ssh/id_*)."),
		port:     fs.IntP("port", "p", 22, "The guest's SSH port."),
		opts:     fs.StringArrayP("local-ssh-opts", "t", nil, "An option for the local ssh or scp client, such as '-o StrictHostKeyChecking=no'; repeatable."),
	}
}

// sshTarget is [USER@]TYPE/NAME[/NAMESPACE].
type sshTarget struct {
	user string
	forwardTarget
}

func parseSSHTarget(arg string) (sshTarget, error) {
	user, rest, ok := strings.Cut(arg, "@")
	if !ok {
		user, rest = "", arg
	} else if user == "" {
		return sshTarget{}, fmt.Errorf("target %q: the user before @ is empty", arg)
	}
	t, err := parseForwardTarget(rest)
	return sshTarget{user: user, forwardTarget: t}, err
}

// short is the target's type as KubeVirt's virtctl spells it: vm or vmi.
func (t sshTarget) short() string {
	if t.kind == kindVMI {
		return "vmi"
	}
	return "vm"
}

// host is how the local client names the guest: KubeVirt's
// [USER@]TYPE.NAME.NAMESPACE, which only the ProxyCommand resolves.
func (t sshTarget) host(user, namespace string) string {
	if t.user != "" {
		user = t.user
	}
	h := t.short() + "." + t.name + "." + namespace
	if user != "" {
		h = user + "@" + h
	}
	return h
}

// clientArgs are the options of the local ssh or scp: the ProxyCommand
// that runs this virtctl's port-forward --stdio to the guest's port (with
// the kubeconfig and context this invocation uses), the user's options,
// then the identity.
func (s *session) clientArgs(self string, t sshTarget, namespace string, f sshFlags) []string {
	proxy := []string{self, "port-forward", "--stdio=true"}
	if s.g.kubeconfig != "" {
		proxy = append(proxy, "--kubeconfig", s.g.kubeconfig)
	}
	if c := s.g.overrides.CurrentContext; c != "" {
		proxy = append(proxy, "--context", c)
	}
	proxy = append(proxy, t.short()+"/"+t.name+"/"+namespace, strconv.Itoa(*f.port))
	quoted := make([]string, len(proxy))
	for i, p := range proxy {
		quoted[i] = shellQuote(p)
	}
	args := []string{"-o", "ProxyCommand=" + strings.Join(quoted, " ")}
	for _, o := range *f.opts {
		args = append(args, strings.Fields(o)...)
	}
	if *f.identity != "" {
		args = append(args, "-i", *f.identity)
	}
	return args
}

// shellQuote quotes s for the shell the client runs a ProxyCommand with.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:@,+", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// exitError carries the exit status of a local client virtctl ran: virtctl
// exits with it, saying nothing more (the client said why).
type exitError struct{ code int }

func (e *exitError) Error() string { return "exit status " + strconv.Itoa(e.code) }

// runClient runs the local program name with args on virtctl's stdin,
// stdout and stderr.
func (s *session) runClient(ctx context.Context, name string, args []string) error {
	bin, err := s.lookPath(name)
	if err != nil {
		return fmt.Errorf("%s: the local %s client is needed (OpenSSH's): %w", name, name, err)
	}
	err = s.exec(ctx, bin, args)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return &exitError{code: ee.ExitCode()}
	}
	return err
}

func sshCommand() command {
	return command{name: "ssh", use: "ssh [USER@]TYPE/NAME[/NAMESPACE]", args: 1,
		short: "Open an SSH connection to a virtual machine's guest, through the API server (with the local ssh client).",
		example: "  # Log in to VM 'tiny' as root with a key:\n  virtctl ssh -i ~/.ssh/id_ed25519 root@vm/tiny\n" +
			"  # Run one command in VMI 'tiny' of namespace 'lab':\n  virtctl ssh root@vmi/tiny/lab --command='uptime'",
		setup: func(fs *pflag.FlagSet) action {
			f := bindSSHFlags(fs)
			command := fs.StringP("command", "c", "", "A command to run in the guest instead of a login shell.")
			return func(ctx context.Context, s *session, args []string) error {
				t, ns, a, err := s.sshClient("ssh", args[0], f)
				if err != nil {
					return err
				}
				a = append(a, t.host(*f.user, ns))
				if *command != "" {
					a = append(a, *command)
				}
				return s.runClient(ctx, "ssh", a)
			}
		}}
}

func scpCommand() command {
	return command{name: "scp", use: "scp SOURCE DESTINATION", args: 2,
		short: "Copy files to or from a virtual machine's guest over SSH, through the API server (with the local scp client).",
		example: "  # Copy a local file into VM 'tiny':\n  virtctl scp ./notes.txt root@vm/tiny:/tmp/notes.txt\n" +
			"  # Copy a folder out of VMI 'tiny' of namespace 'lab':\n  virtctl scp -r root@vmi/tiny/lab:/var/log ./logs",
		setup: func(fs *pflag.FlagSet) action {
			f := bindSSHFlags(fs)
			recursive := fs.BoolP("recursive", "r", false, "Copy folders and what they hold.")
			preserve := fs.Bool("preserve", false, "Keep modification times, access times and modes.")
			return func(ctx context.Context, s *session, args []string) error {
				src, dst := args[0], args[1]
				remote, local, toGuest := dst, src, true
				if strings.Contains(src, ":") {
					remote, local, toGuest = src, dst, false
				}
				if strings.Contains(local, ":") || !strings.Contains(remote, ":") {
					return &usageError{cmd: "scp", err: fmt.Errorf("exactly one of %q and %q must be a guest's [USER@]TYPE/NAME[/NAMESPACE]:PATH", src, dst)}
				}
				target, path, _ := strings.Cut(remote, ":")
				t, ns, a, err := s.sshClient("scp", target, f)
				if err != nil {
					return err
				}
				if *recursive {
					a = append(a, "-r")
				}
				if *preserve {
					a = append(a, "-p")
				}
				guest := t.host(*f.user, ns) + ":" + path
				if toGuest {
					a = append(a, local, guest)
				} else {
					a = append(a, guest, local)
				}
				return s.runClient(ctx, "scp", a)
			}
		}}
}

// sshClient reads the target arg of cmd and returns it, its namespace
// (the target's, else the session's: -n, the context's) and the client's
// options.
func (s *session) sshClient(cmd, arg string, f sshFlags) (sshTarget, string, []string, error) {
	t, err := parseSSHTarget(arg)
	if err != nil {
		return t, "", nil, &usageError{cmd: cmd, err: err}
	}
	ns := t.namespace
	if ns == "" {
		if err := s.connect(); err != nil {
			return t, "", nil, err
		}
		ns = s.ns
	}
	return t, ns, s.clientArgs(s.self, t, ns, f), nil
}
