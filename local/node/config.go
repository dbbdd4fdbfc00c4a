package node

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"path/filepath"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/virtkit/virtkit/local/registry"
)

// Config is what a local node is: its name, where it keeps its pods, which
// host binaries they run and how they are networked. The zero value of an
// optional field takes its default.
type Config struct {
	// Name is the Node's name (required).
	Name string
	// StateDir holds the node's pods, one folder per pod UID under pods/
	// (volumes, logs, termination messages, the network namespace), and the
	// IPAM state under cni/ (required). A restarted node finds its pods'
	// records there.
	StateDir string
	// BinDirs are searched in order for a container's command before PATH:
	// the launcher image's `virt-launcher` runs as BinDirs[i]/virt-launcher.
	BinDirs []string
	// CNIBinDir holds the bridge, host-local and loopback plugins (`make
	// cni-bins` builds them into _output/cni/bin). Required unless
	// WithNetwork replaces the CNI network.
	CNIBinDir string
	// PodCIDR is the IPv4 range the node's pods get addresses from; the
	// first address is the bridge's. Default: 10.88.N.0/24, N derived from
	// Name, so that several local nodes rarely clash (set it when they must not).
	PodCIDR string
	// Bridge is the name of the host bridge pods attach to. Default "vkl-"
	// and 8 hex digits derived from Name.
	Bridge string
	// Registry is the host:port of the OCI registry image volumes are
	// pulled from by the default [RegistryImageStore] (local/registry;
	// virt-local serves it). Default registry.DefaultAddr, 127.0.0.1:5000.
	// Ignored with WithImageStore.
	Registry string
	// ImageDir holds the default RegistryImageStore's unpacked images, one
	// folder per image manifest digest (ImageDir/sha256/HEX). Default
	// StateDir/images. Ignored with WithImageStore.
	ImageDir string
	// InternalIP is the node's reported address. Default: the source
	// address of the host's default route, else 127.0.0.1.
	InternalIP string
	// Capacity overrides the host's figures (cpu, memory, pods,
	// ephemeral-storage); allocatable equals capacity.
	Capacity corev1.ResourceList
	// Labels are added to the node's labels (kubernetes.io/hostname,
	// kubernetes.io/os, kubernetes.io/arch, kubevirt.io/schedulable=true).
	Labels map[string]string
	// Taints are the node's taints. Default none.
	Taints []corev1.Taint
	// Logger receives the node's and its pods' progress.
	Logger logr.Logger
}

func (c Config) withDefaults() (Config, error) {
	if c.Name == "" {
		return c, fmt.Errorf("node: Config.Name: required")
	}
	if errs := validation.IsDNS1123Subdomain(c.Name); len(errs) > 0 {
		return c, fmt.Errorf("node: Config.Name %q: %s", c.Name, errs[0])
	}
	if c.StateDir == "" {
		return c, fmt.Errorf("node: Config.StateDir: required")
	}
	var err error
	if c.StateDir, err = filepath.Abs(c.StateDir); err != nil {
		return c, fmt.Errorf("node: Config.StateDir: %w", err)
	}
	for i, d := range c.BinDirs {
		if c.BinDirs[i], err = filepath.Abs(d); err != nil {
			return c, fmt.Errorf("node: Config.BinDirs[%d]: %w", i, err)
		}
	}
	if c.CNIBinDir != "" {
		if c.CNIBinDir, err = filepath.Abs(c.CNIBinDir); err != nil {
			return c, fmt.Errorf("node: Config.CNIBinDir: %w", err)
		}
	}
	sum := sha256.Sum256([]byte(c.Name))
	if c.PodCIDR == "" {
		c.PodCIDR = fmt.Sprintf("10.88.%d.0/24", sum[0])
	}
	ip, ipnet, err := net.ParseCIDR(c.PodCIDR)
	if err != nil || ip.To4() == nil {
		return c, fmt.Errorf("node: Config.PodCIDR %q: must be an IPv4 range", c.PodCIDR)
	}
	if ones, _ := ipnet.Mask.Size(); ones > 30 {
		return c, fmt.Errorf("node: Config.PodCIDR %q: too small, at most /30", c.PodCIDR)
	}
	if c.Bridge == "" {
		c.Bridge = "vkl-" + hex.EncodeToString(sum[:4])
	}
	if len(c.Bridge) > 15 {
		return c, fmt.Errorf("node: Config.Bridge %q: longer than 15 bytes", c.Bridge)
	}
	if c.Registry == "" {
		c.Registry = registry.DefaultAddr
	}
	if _, _, err := net.SplitHostPort(c.Registry); err != nil {
		return c, fmt.Errorf("node: Config.Registry %q: want host:port: %w", c.Registry, err)
	}
	if c.ImageDir == "" {
		c.ImageDir = filepath.Join(c.StateDir, "images")
	}
	if c.ImageDir, err = filepath.Abs(c.ImageDir); err != nil {
		return c, fmt.Errorf("node: Config.ImageDir: %w", err)
	}
	if c.InternalIP != "" && net.ParseIP(c.InternalIP) == nil {
		return c, fmt.Errorf("node: Config.InternalIP %q: not an IP address", c.InternalIP)
	}
	if c.Logger.GetSink() == nil {
		c.Logger = logr.Discard()
	}
	return c, nil
}

// PodsDir holds one folder per pod UID, laid out as a kubelet's pods
// folder (a pod's emptyDir volumes are where contract.EmptyDir says).
func (c Config) PodsDir() string { return filepath.Join(c.StateDir, "pods") }

// podDir is the folder of one pod.
func (c Config) podDir(uid string) string { return filepath.Join(c.PodsDir(), uid) }
