package clusterconfig_test

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/virtkit/virtkit/virt/clusterconfig"
)

// Read the cluster's KubeVirt CR from the default namespace and take a
// setting from its spec.configuration.
func ExampleGet() {
	scheme := runtime.NewScheme()
	_ = virtv1.AddToScheme(scheme)
	cl := fake.NewClientBuilder().WithScheme(scheme).WithObjects(kubevirt("kubevirt", "kubevirt", true)).Build()

	kv, err := clusterconfig.Get(context.Background(), cl, "")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(kv.Namespace, kv.Name, clusterconfig.Configuration(kv).DeveloperConfiguration.UseEmulation)
	// Output: kubevirt kubevirt true
}
