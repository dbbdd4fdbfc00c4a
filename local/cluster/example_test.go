package cluster_test

import (
	"context"
	"fmt"
	"log"

	"github.com/virtkit/virtkit/local/cluster"
	"github.com/virtkit/virtkit/local/registry"
	"github.com/virtkit/virtkit/virt/domain"
)

// Run virtkit on this machine from your own program: a real control plane,
// virt-api, the controllers, one local node and its handler. The handler's
// libvirt connector is yours to give (virt/domain/libvirt's New links
// libvirt; this package does not).
func ExampleUp() {
	var connect func(ctx context.Context, uri string) (domain.Manager, error) // domainlibvirt.New
	c, err := cluster.Up(context.Background(), cluster.Config{
		DataDir:   "/var/lib/virt-local",
		BinDir:    "_output/bin",     // make kube-bins daemons
		CNIBinDir: "_output/cni/bin", // make cni-bins
		Connector: connect,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Down(context.Background())
	fmt.Println("export KUBECONFIG=" + c.Kubeconfig())

	// containerDisks come from the cluster's registry (c.Registry(),
	// 127.0.0.1:5000): a VM may then name localhost:5000/vms/fedora:41.
	if _, _, err := registry.PushContainerDisk(context.Background(), "localhost:5000/vms/fedora:41", "fedora.qcow2"); err != nil {
		log.Fatal(err)
	}
}
