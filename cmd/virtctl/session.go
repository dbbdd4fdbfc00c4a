package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/internal/scheme"
	"github.com/virtkit/virtkit/virtapi/subresources"
)

// api is what the commands call on the subresources.kubevirt.io API;
// *subresources.Client is the real one, tests use a recording fake.
type api interface {
	Start(ctx context.Context, namespace, name string, opts virtv1.StartOptions) error
	Stop(ctx context.Context, namespace, name string, opts virtv1.StopOptions) error
	Restart(ctx context.Context, namespace, name string, opts virtv1.RestartOptions) error
	Migrate(ctx context.Context, namespace, name string, opts virtv1.MigrateOptions) error
	EvacuateCancel(ctx context.Context, namespace, name string, opts virtv1.EvacuateCancelOptions) error
	EvacuateCancelVMI(ctx context.Context, namespace, name string, opts virtv1.EvacuateCancelOptions) error
	Pause(ctx context.Context, namespace, name string, opts virtv1.PauseOptions) error
	Unpause(ctx context.Context, namespace, name string, opts virtv1.UnpauseOptions) error
	SoftReboot(ctx context.Context, namespace, name string) error
	Reset(ctx context.Context, namespace, name string) error
	AddVolume(ctx context.Context, namespace, name string, opts virtv1.AddVolumeOptions) error
	RemoveVolume(ctx context.Context, namespace, name string, opts virtv1.RemoveVolumeOptions) error
	AddVMIVolume(ctx context.Context, namespace, name string, opts virtv1.AddVolumeOptions) error
	RemoveVMIVolume(ctx context.Context, namespace, name string, opts virtv1.RemoveVolumeOptions) error
	ExpandSpec(ctx context.Context, namespace, name string) (*virtv1.VirtualMachine, error)
	ExpandVMSpec(ctx context.Context, namespace string, vm *virtv1.VirtualMachine) (*virtv1.VirtualMachine, error)
	Console(ctx context.Context, namespace, name string) (io.ReadWriteCloser, error)
	VNC(ctx context.Context, namespace, name string) (io.ReadWriteCloser, error)
	Screenshot(ctx context.Context, namespace, name string) ([]byte, error)
	PortForward(ctx context.Context, resource, namespace, name string, port int, protocol string) (io.ReadWriteCloser, error)
	GuestOSInfo(ctx context.Context, namespace, name string) (virtv1.VirtualMachineInstanceGuestAgentInfo, error)
	UserList(ctx context.Context, namespace, name string) (virtv1.VirtualMachineInstanceGuestOSUserList, error)
	FilesystemList(ctx context.Context, namespace, name string) (virtv1.VirtualMachineInstanceFileSystemList, error)
	Version(ctx context.Context) (subresources.VersionInfo, error)
}

var _ api = (*subresources.Client)(nil)

// deps are the process's effects: streams, environment, clients, clock.
// main fills them with the real ones; tests inject their own.
type deps struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	// home is the user's home folder: ~/.kube/config is the kubeconfig of
	// last resort, as for kubectl.
	home string
	// connect makes the clients for a loaded configuration.
	connect func(cfg *rest.Config) (api, client.Client, error)
	// randomSuffix ends the name of what `create` was not given a name
	// for (vm-XXXXX, clusterinstancetype-XXXXX...): 5 random characters.
	randomSuffix func() string
	// lookPath finds a VNC viewer, ssh and scp.
	lookPath func(file string) (string, error)
	// exec runs a local client (ssh, scp) on virtctl's stdin, stdout and
	// stderr until it ends; an *exec.ExitError says how it ended.
	exec func(ctx context.Context, bin string, args []string) error
	// self is this program, which a client's ProxyCommand runs.
	self string
	// poll is how often console and vnc retry while a VMI is not ready.
	poll time.Duration
	// version is this binary's version.
	version subresources.VersionInfo
}

// realConnect builds a subresources client and a controller-runtime client
// that knows the kubevirt.io types.
func realConnect(cfg *rest.Config) (api, client.Client, error) {
	sub, err := subresources.NewClient(cfg)
	if err != nil {
		return nil, nil, err
	}
	kube, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, nil, err
	}
	return sub, kube, nil
}

// globals are kubectl's connection flags, valid before and after the command.
type globals struct {
	kubeconfig string
	overrides  clientcmd.ConfigOverrides
}

// bind defines the global flags on fs.
func (g *globals) bind(fs *pflag.FlagSet) {
	fs.StringVar(&g.kubeconfig, "kubeconfig", "", "Path to the kubeconfig file; without it $KUBECONFIG, then ~/.kube/config, as for kubectl.")
	clientcmd.BindOverrideFlags(&g.overrides, fs, clientcmd.RecommendedConfigOverrideFlags(""))
}

// session is one invocation: the flags, and once connected the namespace
// and the clients.
type session struct {
	deps
	g globals

	connected bool
	ns        string
	context   string // the kubeconfig context in use, for messages
	host      string // the API server, for messages
	sub       api
	kube      client.Client
	cfg       *rest.Config // the loaded configuration, once connected
}

// kubeconfigPath says which kubeconfig files are read and why, for messages.
func (s *session) kubeconfigPath() string {
	switch {
	case s.g.kubeconfig != "":
		return s.g.kubeconfig + " (--kubeconfig)"
	case s.getenv(clientcmd.RecommendedConfigPathEnvVar) != "":
		return s.getenv(clientcmd.RecommendedConfigPathEnvVar) + " ($KUBECONFIG)"
	}
	return s.homeConfig()
}

func (s *session) homeConfig() string {
	return filepath.Join(s.home, clientcmd.RecommendedHomeDir, clientcmd.RecommendedFileName)
}

// where names the API server and the kubeconfig that pointed at it.
func (s *session) where() string {
	ctx := ""
	if s.context != "" {
		ctx = fmt.Sprintf("context %q of ", s.context)
	}
	return fmt.Sprintf("the API server %s (%skubeconfig %s)", s.host, ctx, s.kubeconfigPath())
}

// connect loads the kubeconfig as kubectl does (--kubeconfig, else
// $KUBECONFIG, else ~/.kube/config, else the in-cluster service account;
// the global flags override it) and makes the clients. The namespace is
// -n, else the context's, else default.
func (s *session) connect() error {
	if s.connected {
		return nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = s.g.kubeconfig
	rules.Precedence = []string{s.homeConfig()}
	if env := s.getenv(clientcmd.RecommendedConfigPathEnvVar); env != "" {
		rules.Precedence = filepath.SplitList(env)
	}
	rules.MigrationRules = nil
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &s.g.overrides)
	cfg, err := cc.ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			where := fmt.Sprintf("--kubeconfig is not set, $KUBECONFIG is empty and %s does not exist", s.homeConfig())
			if env := s.getenv(clientcmd.RecommendedConfigPathEnvVar); env != "" {
				where = fmt.Sprintf("$KUBECONFIG names %s, which does not exist or names no cluster", env)
			}
			return fmt.Errorf("no kubeconfig: %s\n"+
				"Point virtctl at a cluster as you would kubectl: with virt-local, run `make run` and the `export KUBECONFIG=...` it prints", where)
		}
		return fmt.Errorf("loading kubeconfig %s: %w", s.kubeconfigPath(), err)
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return fmt.Errorf("reading the namespace from kubeconfig %s: %w", s.kubeconfigPath(), err)
	}
	if raw, err := cc.RawConfig(); err == nil {
		s.context = raw.CurrentContext
		if s.g.overrides.CurrentContext != "" {
			s.context = s.g.overrides.CurrentContext
		}
	}
	s.ns, s.host, s.cfg = ns, cfg.Host, cfg
	s.sub, s.kube, err = s.deps.connect(cfg)
	if err != nil {
		return fmt.Errorf("making a client for %s: %w", s.where(), err)
	}
	s.connected = true
	return nil
}

// dryRun returns the dryRun option of a request, saying so as KubeVirt's
// virtctl does.
func (s *session) dryRun(dry bool) []string {
	if !dry {
		return nil
	}
	fmt.Fprintln(s.stdout, "Dry Run execution")
	return []string{"All"}
}

// defaultDeps are the real process's.
func defaultDeps() deps {
	home, _ := os.UserHomeDir()
	return deps{
		stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr,
		getenv: os.Getenv, home: home,
		connect:      realConnect,
		randomSuffix: func() string { return rand.String(5) },
		lookPath:     lookPath,
		exec:         runLocal,
		self:         selfPath(),
		poll:         time.Second,
		version:      subresources.BuildVersion(),
	}
}

// runLocal runs bin with args on this process's stdin, stdout and stderr.
func runLocal(ctx context.Context, bin string, args []string) error {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	return cmd.Run()
}

// selfPath is this program's path, as a ProxyCommand can run it again.
func selfPath() string {
	if p, err := os.Executable(); err == nil {
		return p
	}
	return os.Args[0]
}
