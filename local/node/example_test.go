package node_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/virtkit/virtkit/local/node"
)

// A local node on a running control plane (local/controlplane): pods the
// scheduler binds to it run as host processes, the launcher image's
// virt-launcher as _output/bin/virt-launcher, on a bridge with the CNI
// plugins `make cni-bins` builds. Stop ends its pods and removes its bridge.
func ExampleStart() {
	rc, err := clientcmd.BuildConfigFromFlags("", "/var/lib/virt-local/kubeconfig")
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	n, err := node.Start(ctx, node.Config{
		Name:      "local-1",
		StateDir:  "/var/lib/virt-local/nodes/local-1",
		BinDirs:   []string{"_output/bin"},
		CNIBinDir: "_output/cni/bin",
		PodCIDR:   "10.88.1.0/24",
	}, kubernetes.NewForConfigOrDie(rc))
	if err != nil {
		log.Fatal(err)
	}
	defer n.Stop(ctx)
	fmt.Println("node", n.Config().Name, "runs pods on bridge", n.Config().Bridge)
}

// Image volumes (containerDisks) come from an ImageStore; DirImageStore
// reads unpacked images from folders named after the reference.
func ExampleDirImageStore() {
	root, _ := os.MkdirTemp("", "images")
	defer os.RemoveAll(root)
	_ = os.MkdirAll(filepath.Join(root, "registry:5000", "disks", "alpine", "v1", "disk"), 0o755)

	store := node.DirImageStore{Root: root}
	dir, err := store.Mount(context.Background(), "registry:5000/disks/alpine:v1")
	fmt.Println(filepath.Rel(root, dir))
	fmt.Println(err)
	_, err = store.Mount(context.Background(), "registry:5000/disks/alpine:v2")
	fmt.Println(errors.Is(err, node.ErrImageNotFound))
	// Output:
	// registry:5000/disks/alpine/v1 <nil>
	// <nil>
	// true
}
