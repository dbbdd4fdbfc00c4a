package controlplane_test

import (
	"context"
	"fmt"
	"log"

	"github.com/virtkit/virtkit/local/controlplane"
)

// A control plane from the binaries `make kube-bins` builds, its state in
// one folder. Stop it to end the four processes; start it again on the same
// folder to find the cluster as it was.
func ExampleStart() {
	cp, err := controlplane.Start(context.Background(), controlplane.Config{
		DataDir: "/var/lib/virt-local",
		BinDir:  "_output/bin",
	})
	if err != nil {
		log.Fatal(err)
	}
	defer cp.Stop()
	fmt.Println("kubectl --kubeconfig", cp.Config().AdminKubeconfig(), "get nodes")
}
