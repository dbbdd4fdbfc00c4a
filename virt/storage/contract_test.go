package storage_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/storage"
	"github.com/virtkit/virtkit/virt/storage/storagetest"
)

// The real Manager passes the storage contract on real files in a
// temporary pod folder.
func TestContract(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storagetest.Target {
		root, l := podRoot(t)
		return storagetest.Target{
			Storage: storage.New(storage.WithLayout(l)),
			Pod: func(t *testing.T, vmi *virtv1.VirtualMachineInstance) storage.Pod {
				pod := storage.Pod{Volumes: map[string]storage.VolumeFacts{}}
				for i, v := range vmi.Spec.Volumes {
					switch {
					case v.PersistentVolumeClaim != nil:
						mkdir(t, filepath.Join(l.PrivateDir, "vmi-disks", v.Name))
						pod.Volumes[v.Name] = storage.VolumeFacts{CapacityBytes: 64 << 20}
					case v.ContainerDisk != nil:
						writeFile(t, filepath.Join(l.ContainerDisksDir, "disk_"+strconv.Itoa(i)+".img"), make([]byte, 4<<20))
					}
				}
				return pod
			},
			InPlace: func(t *testing.T) []string { return files(t, root) },
			Exists: func(t *testing.T, path string) bool {
				_, err := os.Stat(path)
				if err != nil && !errors.Is(err, fs.ErrNotExist) {
					t.Fatal(err)
				}
				return err == nil
			},
			Caps: storagetest.Capabilities{ReadsFiles: true},
		}
	})
}

// files lists the files (not folders) below root, sorted.
func files(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	for _, p := range tree(t, root) {
		if st, err := os.Lstat(p); err == nil && !st.IsDir() {
			out = append(out, p)
		}
	}
	return out
}
