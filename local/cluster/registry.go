package cluster

import (
	"context"
	"path/filepath"
	"time"

	"github.com/virtkit/virtkit/local/registry"
)

// RegistryDir holds the images the cluster's registry serves, an OCI image
// layout (local/registry).
func (c Config) RegistryDir() string { return filepath.Join(c.DataDir, "registry") }

// startRegistry serves the cluster's registry, where the nodes pull image
// volumes (containerDisks, kernel-boot images) from.
func (c *Cluster) startRegistry(ctx context.Context) (err error) {
	c.reg, err = registry.Start(ctx, registry.Config{Dir: c.cfg.RegistryDir(), Addr: c.cfg.RegistryAddr,
		Logger: c.cfg.Logger.WithName("registry")})
	return err
}

// stopRegistry stops the registry, once the nodes no longer pull.
func (c *Cluster) stopRegistry(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return c.reg.Stop(ctx)
}

// Registry is the host:port of the cluster's registry: push images there
// (as localhost:PORT/REPOSITORY:TAG, e.g. with registry.PushContainerDisk)
// for image volumes and containerDisks.
func (c *Cluster) Registry() string { return c.reg.Addr() }
