package importer_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/virtkit/virtkit/virt/storage/importer"
	"github.com/virtkit/virtkit/virt/storage/importer/importertest"
)

// TestPreallocate: with Preallocate, an import and a blank disk allocate
// every block of the disk, and the disk reads as without it.
func TestPreallocate(t *testing.T) {
	s := newServer(t)
	s.put("disk", importertest.Disk())
	dir := t.TempDir()
	path := filepath.Join(dir, "disk.img")
	if _, err := importer.New().Import(context.Background(), s.source("/images/disk"), importer.Target{Path: path, Size: 64 << 20, Preallocate: true}); err != nil {
		t.Fatal(err)
	}
	importertest.CheckDisk(t, path, 64<<20)
	checkAllocated(t, path, 64<<20)
	blank := filepath.Join(dir, "blank.img")
	if err := importer.New().Blank(context.Background(), importer.Target{Path: blank, Size: 32 << 20, Preallocate: true}); err != nil {
		t.Fatal(err)
	}
	checkAllocated(t, blank, 32<<20)
}

// checkAllocated checks that the file at path allocates all its size
// bytes.
func checkAllocated(t *testing.T, path string, size int64) {
	t.Helper()
	used, ok := allocated(t, path)
	if ok && used < size {
		t.Errorf("%s allocates %d bytes of its %d; want them all", path, used, size)
	}
}
