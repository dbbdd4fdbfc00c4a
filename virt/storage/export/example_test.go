package export_test

import (
	"fmt"

	"github.com/virtkit/virtkit/virt/storage/export"
)

// The links an export of one disk claim lists for clients in the cluster.
func ExampleLinks() {
	vols := []export.Volume{{Claim: "rootdisk", Path: "/export-volumes/rootdisk", Content: export.DiskImage}}
	l := export.Links(export.InternalBase("default", "my-export"), "", export.Internal, vols, false)
	for _, v := range l.Volumes {
		for _, f := range v.Formats {
			fmt.Println(v.Name, f.Format, f.Url)
		}
	}
	for _, m := range l.Manifests {
		fmt.Println(m.Type, m.Url)
	}
	// Output:
	// rootdisk raw https://virt-export-my-export.default.svc/volumes/rootdisk/disk.img
	// rootdisk gzip https://virt-export-my-export.default.svc/volumes/rootdisk/disk.img.gz
	// auth-header-secret https://virt-export-my-export.default.svc/internal/manifests/secret
}
