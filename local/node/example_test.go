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
	"github.com/virtkit/virtkit/local/registry"
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

// Image volumes (containerDisks) come from an ImageStore. The default,
// RegistryImageStore, pulls them from one registry (virt-local's
// local/registry, on loopback) and unpacks each under its Dir; an image of
// another registry is not found, as one missing from it.
func ExampleRegistryImageStore() {
	dir, _ := os.MkdirTemp("", "images")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	reg, err := registry.Start(ctx, registry.Config{Dir: filepath.Join(dir, "registry"), Addr: "127.0.0.1:0"})
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Stop(ctx)
	disk := filepath.Join(dir, "disk.qcow2")
	_ = os.WriteFile(disk, []byte("a disk image"), 0o644)
	if _, _, err := registry.PushContainerDisk(ctx, reg.Addr()+"/disks/alpine:v1", disk); err != nil {
		log.Fatal(err)
	}

	store := &node.RegistryImageStore{Registry: reg.Addr(), Dir: filepath.Join(dir, "images")}
	folder, err := store.Mount(ctx, reg.Addr()+"/disks/alpine:v1")
	if err != nil {
		log.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(folder, "disk", "disk.qcow2"))
	fmt.Printf("%q %v\n", b, err)
	_, err = store.Mount(ctx, reg.Addr()+"/disks/alpine:v2")
	fmt.Println(errors.Is(err, node.ErrImageNotFound))
	_, err = store.Mount(ctx, "quay.io/containerdisks/fedora:41")
	fmt.Println(errors.Is(err, node.ErrImageNotFound))
	// Output:
	// "a disk image" <nil>
	// true
	// true
}
