package cluster

import (
	"context"
	"fmt"
	"path/filepath"

	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/deploy"
	"github.com/virtkit/virtkit/local/provisioner"
)

// StorageClassName is virt-local's default StorageClass: claims of it get a
// folder under Config.VolumeDir (local/provisioner).
const StorageClassName = "local"

// VolumeDir holds the folders behind the cluster's PersistentVolumes.
func (c Config) VolumeDir() string { return filepath.Join(c.DataDir, "volumes") }

// startProvisioner installs the default StorageClass and starts the folder
// provisioner that serves it.
func (c *Cluster) startProvisioner(ctx context.Context, cl client.Client) (*manager, error) {
	if err := deploy.Apply(ctx, cl, provisioner.StorageClass(StorageClassName, true)); err != nil {
		return nil, fmt.Errorf("cluster: StorageClass %s: %w", StorageClassName, err)
	}
	cs, err := kubernetes.NewForConfig(c.clientConfig(ComponentProvisioner))
	if err != nil {
		return nil, fmt.Errorf("cluster: provisioner: %w", err)
	}
	run, cancel := context.WithCancel(context.Background())
	m := &manager{cancel: cancel, done: make(chan error, 1)}
	as(ComponentProvisioner, func() {
		go func() {
			m.done <- provisioner.Run(run, cs, c.cfg.VolumeDir(), provisioner.WithLogger(c.cfg.Logger.WithName("provisioner")))
		}()
	})
	return m, nil
}
