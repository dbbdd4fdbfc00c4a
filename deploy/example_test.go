package deploy_test

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/deploy"
)

// Install the CRDs on a cluster and wait until their kinds can be used.
func ExampleCRDs() {
	var cl client.Client // a client for the cluster, e.g. from controller-runtime
	crds, err := deploy.CRDs()
	if err != nil {
		panic(err)
	}
	fmt.Println(len(crds), "CRDs, the first", crds[0].Name)
	if cl == nil {
		return
	}
	objs := make([]client.Object, 0, len(crds))
	for _, c := range crds {
		objs = append(objs, c)
	}
	ctx := context.Background()
	if err := deploy.Apply(ctx, cl, objs...); err != nil {
		panic(err)
	}
	if err := deploy.WaitEstablished(ctx, cl, crds); err != nil {
		panic(err)
	}
	// Output: 22 CRDs, the first cdiconfigs.cdi.kubevirt.io
}
