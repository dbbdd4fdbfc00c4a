package controlplane

import (
	"fmt"
	"net"
	"path/filepath"

	"github.com/go-logr/logr"
)

// Config is where a control plane keeps its state, where its binaries are
// and how it is reached. The zero value of a field takes its default.
type Config struct {
	// DataDir holds pki/, etcd/, logs/ and the kubeconfigs (required).
	DataDir string
	// BinDir holds etcd, kube-apiserver, kube-scheduler and
	// kube-controller-manager (required).
	BinDir string
	// APIServerPort is the apiserver's loopback HTTPS port. Default 6443.
	APIServerPort int
	// EtcdPort is etcd's loopback client port; EtcdPort+1 is its peer
	// port. Default 2379.
	EtcdPort int
	// ServiceCIDR is the service IP range. Default 10.96.0.0/16; its
	// first address is the kubernetes service's.
	ServiceCIDR string
	// APIServerFlags are appended to kube-apiserver's flags ("--name=value").
	APIServerFlags []string
	// WebhookClientHosts are the webhook hosts (a Service's
	// SERVICE.NAMESPACE.svc, with :PORT unless it is 443, or a URL's
	// host:port) to which the apiserver presents its front-proxy client
	// certificate, so that they can tell its calls from anyone's.
	WebhookClientHosts []string
	// Logger receives progress and process restarts.
	Logger logr.Logger
}

func (c Config) withDefaults() (Config, error) {
	if c.DataDir == "" {
		return c, fmt.Errorf("controlplane: Config.DataDir: required")
	}
	if c.BinDir == "" {
		return c, fmt.Errorf("controlplane: Config.BinDir: required")
	}
	var err error
	if c.DataDir, err = filepath.Abs(c.DataDir); err != nil {
		return c, fmt.Errorf("controlplane: Config.DataDir: %w", err)
	}
	if c.BinDir, err = filepath.Abs(c.BinDir); err != nil {
		return c, fmt.Errorf("controlplane: Config.BinDir: %w", err)
	}
	if c.APIServerPort == 0 {
		c.APIServerPort = 6443
	}
	if c.EtcdPort == 0 {
		c.EtcdPort = 2379
	}
	if c.ServiceCIDR == "" {
		c.ServiceCIDR = "10.96.0.0/16"
	}
	if _, _, err := net.ParseCIDR(c.ServiceCIDR); err != nil {
		return c, fmt.Errorf("controlplane: Config.ServiceCIDR %q: %w", c.ServiceCIDR, err)
	}
	if c.Logger.GetSink() == nil {
		c.Logger = logr.Discard()
	}
	return c, nil
}

// PKI is where the certificates are.
func (c Config) PKI() PKI { return PKI{Dir: filepath.Join(c.DataDir, "pki")} }

// AdminKubeconfig is the kubeconfig of a cluster administrator
// (system:masters), for kubectl and for in-process components.
func (c Config) AdminKubeconfig() string { return filepath.Join(c.DataDir, "kubeconfig") }

// LogDir holds one log file per process.
func (c Config) LogDir() string { return filepath.Join(c.DataDir, "logs") }

// serviceIP is the kubernetes service's address: the range's first host.
func (c Config) serviceIP() net.IP {
	_, n, _ := net.ParseCIDR(c.ServiceCIDR)
	ip := n.IP.To4()
	if ip == nil {
		ip = n.IP
	}
	out := append(net.IP(nil), ip...)
	out[len(out)-1]++
	return out
}
