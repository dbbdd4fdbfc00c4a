package registry_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/virtkit/virtkit/local/registry"
)

// Serve a registry on loopback, push a disk image as a containerDisk, and
// pull it back as any OCI client does. virt-local serves its registry on
// DefaultAddr (127.0.0.1:5000) with its state under DATA/registry.
func ExampleStart() {
	dir, _ := os.MkdirTemp("", "registry")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	r, err := registry.Start(ctx, registry.Config{Dir: filepath.Join(dir, "registry"), Addr: "127.0.0.1:0"})
	if err != nil {
		log.Fatal(err)
	}
	defer r.Stop(ctx)

	disk := filepath.Join(dir, "disk.qcow2")
	_ = os.WriteFile(disk, []byte("a disk image"), 0o644)
	ref := r.Addr() + "/vms/tiny:v1"
	_, pushed, err := registry.PushContainerDisk(ctx, ref, disk)
	fmt.Println("pushed:", pushed, err)
	_, pushed, err = registry.PushContainerDisk(ctx, ref, disk)
	fmt.Println("pushed again:", pushed, err)

	parsed, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		log.Fatal(err)
	}
	img, err := remote.Image(parsed, remote.WithContext(ctx))
	if err != nil {
		log.Fatal(err)
	}
	layers, _ := img.Layers()
	fmt.Println("layers:", len(layers))
	// Output:
	// pushed: true <nil>
	// pushed again: false <nil>
	// layers: 1
}
