package cluster_test

import (
	"context"
	"fmt"
	"log"

	"github.com/virtkit/virtkit/local/cluster"
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
}
