package kubelet

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"

	"github.com/virtkit/virtkit/local/controlplane"
)

// Config is one real node. The zero value of an optional field takes its
// default.
type Config struct {
	// Dir holds the node's state: containerd's root and state, the
	// kubelet's root, configuration files, logs and the host state record
	// (required; keep it short: unix socket paths live below it).
	Dir string
	// ControlPlane is the cluster the node joins: its PKI issues the
	// kubelet's client certificate, its admin kubeconfig deletes pods and
	// binds RBAC (required).
	ControlPlane controlplane.Config
	// NodeName is the Node's name; default "kubelet".
	NodeName string
	// NodeIP is the node's InternalIP, where the kubelet serves its API; the
	// kubelet refuses loopback addresses. Default: the address of the
	// host's interface of the default route.
	NodeIP string
	// KubeletBinary is the kubelet (`make kube-bins`) (required).
	KubeletBinary string
	// ContainerdBinDir holds containerd, containerd-shim-runc-v2 and ctr
	// (`make containerd-bins`) (required).
	ContainerdBinDir string
	// CNIBinDir holds the CNI plugins bridge, host-local and loopback
	// (`make cni-bins`) (required).
	CNIBinDir string
	// Runc is the OCI runtime; default /usr/sbin/runc (Debian's runc).
	Runc string
	// SandboxImage is the pods' sandbox (pause) image (required; for
	// example REGISTRY/virtkit/pause:devel from `make images`).
	SandboxImage string
	// InsecureRegistries are host:port registries spoken to over plain
	// HTTP (virt-local's registry).
	InsecureRegistries []string
	// PodSubnet is the pods' IPv4 range on the node's bridge; default
	// 10.89.0.0/24.
	PodSubnet string
	// Bridge is the host bridge of the pods; default "vkt-kubelet0".
	Bridge string
	// KubeletPort is the kubelet API's port on NodeIP; default 10350 (not
	// the usual 10250, which a virtual kubelet on this machine may hold).
	KubeletPort int
	// ReadyTimeout bounds the wait for the Node to be Ready; default 2 min.
	ReadyTimeout time.Duration
	// Logger receives progress; the daemons' own logs go to files under Dir/logs.
	Logger logr.Logger
}

func (c Config) withDefaults() (Config, error) {
	var errs []error
	if c.Dir == "" {
		errs = append(errs, errors.New("kubelet: Config.Dir: required"))
	}
	if c.ControlPlane.DataDir == "" {
		errs = append(errs, errors.New("kubelet: Config.ControlPlane: required"))
	}
	if c.KubeletBinary == "" {
		errs = append(errs, errors.New("kubelet: Config.KubeletBinary: required (make kube-bins)"))
	}
	if c.ContainerdBinDir == "" {
		errs = append(errs, errors.New("kubelet: Config.ContainerdBinDir: required (make containerd-bins)"))
	}
	if c.CNIBinDir == "" {
		errs = append(errs, errors.New("kubelet: Config.CNIBinDir: required (make cni-bins)"))
	}
	if c.SandboxImage == "" {
		errs = append(errs, errors.New("kubelet: Config.SandboxImage: required"))
	}
	if err := errors.Join(errs...); err != nil {
		return c, err
	}
	if c.NodeName == "" {
		c.NodeName = "kubelet"
	}
	if c.Runc == "" {
		c.Runc = "/usr/sbin/runc"
	}
	if c.PodSubnet == "" {
		c.PodSubnet = "10.89.0.0/24"
	}
	if c.Bridge == "" {
		c.Bridge = "vkt-kubelet0"
	}
	if c.KubeletPort == 0 {
		c.KubeletPort = 10350
	}
	if c.ReadyTimeout == 0 {
		c.ReadyTimeout = 2 * time.Minute
	}
	if c.Logger.GetSink() == nil {
		c.Logger = logr.Discard()
	}
	if c.NodeIP == "" {
		ip, err := defaultRouteIP()
		if err != nil {
			return c, fmt.Errorf("kubelet: Config.NodeIP: no default: %w", err)
		}
		c.NodeIP = ip
	}
	if ip := net.ParseIP(c.NodeIP); ip == nil || ip.IsLoopback() || ip.IsUnspecified() {
		return c, fmt.Errorf("kubelet: Config.NodeIP %q: must be an address of this host that is not loopback", c.NodeIP)
	}
	if _, _, err := net.ParseCIDR(c.PodSubnet); err != nil {
		return c, fmt.Errorf("kubelet: Config.PodSubnet %q: %w", c.PodSubnet, err)
	}
	return c, nil
}

// PodsDir is the kubelet's pods folder (its --root-dir's pods), where each
// pod's volumes are.
func (c Config) PodsDir() string { return filepath.Join(paths{dir: c.Dir}.kubeletRoot(), "pods") }

// PluginsRegistryDir is the kubelet's plugin registry folder, where a CSI
// driver puts its registration socket (csidriver.ServeRegistration).
func (c Config) PluginsRegistryDir() string {
	return filepath.Join(paths{dir: c.Dir}.kubeletRoot(), "plugins_registry")
}

// paths are the files of a node below Config.Dir.
type paths struct{ dir string }

func (p paths) containerdConfig() string { return filepath.Join(p.dir, "containerd.toml") }
func (p paths) containerdRoot() string   { return filepath.Join(p.dir, "containerd", "root") }
func (p paths) containerdState() string  { return filepath.Join(p.dir, "containerd", "state") }
func (p paths) containerdSocket() string { return filepath.Join(p.dir, "containerd.sock") }
func (p paths) certsDir() string         { return filepath.Join(p.dir, "certs.d") }
func (p paths) cniConfDir() string       { return filepath.Join(p.dir, "cni", "net.d") }
func (p paths) cniLeases() string        { return filepath.Join(p.dir, "cni", "leases") }
func (p paths) kubeletRoot() string      { return filepath.Join(p.dir, "kubelet") }
func (p paths) kubeletConfig() string    { return filepath.Join(p.dir, "kubelet.yaml") }
func (p paths) kubeconfig() string       { return filepath.Join(p.dir, "kubelet.kubeconfig") }
func (p paths) podLogs() string          { return filepath.Join(p.dir, "pod-logs") }
func (p paths) logs() string             { return filepath.Join(p.dir, "logs") }
func (p paths) hostState() string        { return filepath.Join(p.dir, "host-state.json") }
