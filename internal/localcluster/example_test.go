package localcluster_test

import (
	"context"
	"fmt"

	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/internal/localcluster"
)

// A benchmark starts virt-local with two nodes of its own, lists the VMIs
// through the cluster's client, and stops it. (Not run: it needs the
// checkout's _output and root.)
func Example() {
	ctx := context.Background()
	c, err := localcluster.Start(ctx, localcluster.Options{Repo: ".", Nodes: []string{"bench-a", "bench-b"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Stop(ctx)
	var vmis virtv1.VirtualMachineInstanceList
	if err := c.Client.List(ctx, &vmis, client.InNamespace("default")); err != nil {
		fmt.Println(err)
	}
	fmt.Println(c.GuestImage, len(vmis.Items))
}
