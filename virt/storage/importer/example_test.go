package importer_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/virtkit/virtkit/virt/storage/importer"
	"github.com/virtkit/virtkit/virt/storage/importer/contract"
)

// Import a gzip-compressed raw image over HTTP into a file-system claim's
// disk.img, sized as CDI sizes it.
func Example() {
	image := make([]byte, 3<<20)
	copy(image, "boot sector")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pass, _ := r.BasicAuth(); pass != "secret" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		_, _ = w.Write(gzipped(image))
	}))
	defer srv.Close()
	claim, _ := os.MkdirTemp("", "claim")
	defer os.RemoveAll(claim)

	im := importer.New()
	src := importer.HTTPSource{URL: srv.URL + "/disk.img.gz", Username: "cdi", Password: "secret"}
	dst := importer.Target{
		Path:       filepath.Join(claim, "disk.img"),
		Size:       contract.UsableSpace(64<<20, contract.DefaultFilesystemOverhead),
		ScratchDir: filepath.Join(claim, "scratch"),
	}
	res, err := im.Import(context.Background(), src, dst)
	if err != nil {
		fmt.Println(err, "retry:", importer.IsRetryable(err))
		return
	}
	fi, _ := os.Stat(dst.Path)
	fmt.Printf("%s, %s, %d bytes; disk.img is %d MiB\n", res.Format, res.Compression, res.VirtualSize, fi.Size()>>20)

	_, err = im.Import(context.Background(), importer.HTTPSource{URL: srv.URL + "/disk.img.gz"}, dst)
	fmt.Println(importer.ReasonOf(err), "retry:", importer.IsRetryable(err))
	// Output:
	// raw, gzip, 3145728 bytes; disk.img is 60 MiB
	// SourceRefused retry: false
}

// Import the disk of a containerDisk image from a private registry, as a
// DataVolume's registry source with secretRef and certConfigMap does.
func ExampleRegistrySource() {
	caPEM, _ := os.ReadFile("/etc/virtkit-example/registry-ca.pem") // the certConfigMap's files
	src := importer.RegistrySource{
		Image:    "registry.example.com:5000/containerdisks/fedora:41",
		CABundle: caPEM,
		Username: "puller", Password: "from the secretRef",
	}
	dst := importer.Target{Path: "/data/disk.img", Size: 10 << 30, ScratchDir: "/data/.scratch"}
	if _, err := importer.New().Import(context.Background(), src, dst); err != nil {
		fmt.Println(importer.ReasonOf(err), "retry:", importer.IsRetryable(err))
	}
}
