package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/virtkit/virtkit/deploy/images"
	"github.com/virtkit/virtkit/local/kubelet"
	"github.com/virtkit/virtkit/local/registry"
)

// ImageTag is the tag of the images `make images` writes and the cluster
// pushes.
const ImageTag = "devel"

// startKubeletNode pushes the sandbox image and starts the real node.
func (c *Cluster) startKubeletNode(ctx context.Context, nets *networks) (*kubelet.Node, error) {
	cfg := c.cfg
	name := cfg.KubeletNode
	network, err := nets.assign(name, len(cfg.Nodes))
	if err != nil {
		return nil, err
	}
	pause, err := c.pushBuilt(ctx, images.Pause().Name)
	if err != nil {
		return nil, err
	}
	cfg.Logger.Info("starting the real node (kubelet, containerd)", "node", name, "bridge", network.Bridge, "pods", network.PodCIDR)
	_, port, err := net.SplitHostPort(c.Registry())
	if err != nil {
		return nil, fmt.Errorf("cluster: registry address %q: %w", c.Registry(), err)
	}
	kc := kubelet.Config{
		Dir: cfg.kubeletDir(name), ControlPlane: c.cp.Config(), NodeName: name,
		KubeletBinary: filepath.Join(cfg.BinDir, "kubelet"), ContainerdBinDir: cfg.ContainerdBinDir, CNIBinDir: cfg.CNIBinDir,
		SandboxImage: pause, InsecureRegistries: []string{"127.0.0.1:" + port, "localhost:" + port},
		Bridge: network.Bridge, PodSubnet: network.PodCIDR, Logger: cfg.Logger.WithName("kubelet"),
	}
	n, err := kubelet.Start(ctx, kc)
	if err != nil {
		return n, err
	}
	// Its pods' CSI volumes are the machine's driver's too.
	c.storage.registerWithKubelet(kc.PluginsRegistryDir())
	return n, nil
}

// pushBuilt pushes image NAME:ImageTag of ImagesDir to the cluster's
// registry as REGISTRY/virtkit/NAME:ImageTag and returns that reference.
func (c *Cluster) pushBuilt(ctx context.Context, name string) (string, error) {
	return c.pushBuiltAs(ctx, name, ImageTag)
}

// pushBuiltAs pushes image NAME:ImageTag of ImagesDir as
// REGISTRY/virtkit/NAME:tag and returns that reference.
func (c *Cluster) pushBuiltAs(ctx context.Context, name, tag string) (string, error) {
	img, err := images.FromLayout(c.cfg.ImagesDir, name+":"+ImageTag)
	if err != nil {
		return "", fmt.Errorf("cluster: %w (make images)", err)
	}
	target := c.Registry() + "/virtkit/" + name + ":" + tag
	if _, _, err := registry.Push(ctx, target, img); err != nil {
		return "", err
	}
	return target, nil
}

// CleanupKubeletNodes restores the host after real nodes of the data
// directory dataDir that were not stopped (virt-local killed): see
// kubelet.Cleanup. Nothing happens for a node that was stopped.
func CleanupKubeletNodes(ctx context.Context, dataDir string) error {
	entries, err := os.ReadDir(filepath.Join(dataDir, "kubelets"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	var errs []error
	for _, e := range entries {
		if e.IsDir() {
			errs = append(errs, kubelet.Cleanup(ctx, filepath.Join(dataDir, "kubelets", e.Name())))
		}
	}
	return errors.Join(errs...)
}
