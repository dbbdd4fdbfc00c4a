package importer_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/virtkit/virtkit/virt/storage/importer"
	"github.com/virtkit/virtkit/virt/storage/importer/importertest"
)

// TestFileSource: a file or the one file of a folder is read; a link, a
// folder of several files and a missing path are refused for good.
func TestFileSource(t *testing.T) {
	dir := t.TempDir()
	disk := importertest.Disk()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "image", "disk"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "image", "disk", "disk.img"), disk, 0o644))
	must(os.WriteFile(filepath.Join(dir, "image", "disk", ".hidden"), nil, 0o644))
	must(os.WriteFile(filepath.Join(dir, "claim.img"), disk, 0o644))
	must(os.WriteFile(filepath.Join(dir, "host-secret"), []byte("secret"), 0o644))
	must(os.Symlink(filepath.Join(dir, "host-secret"), filepath.Join(dir, "link.img")))
	must(os.MkdirAll(filepath.Join(dir, "two"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "two", "a.img"), disk, 0o644))
	must(os.WriteFile(filepath.Join(dir, "two", "b.img"), disk, 0o644))

	for _, p := range []string{filepath.Join(dir, "image", "disk"), filepath.Join(dir, "claim.img")} {
		target := filepath.Join(t.TempDir(), "disk.img")
		res, err := importer.New().Import(context.Background(), importer.FileSource{Path: p}, importer.Target{Path: target, Size: 8 << 20})
		if err != nil {
			t.Fatalf("Import from %s: %v", p, err)
		}
		if res.Transferred != int64(len(disk)) {
			t.Errorf("Import from %s transferred %d bytes, want %d", p, res.Transferred, len(disk))
		}
		importertest.CheckDisk(t, target, 8<<20)
	}
	for name, tc := range map[string]struct{ path, want string }{
		"a link":        {filepath.Join(dir, "link.img"), "symbolic link"},
		"several files": {filepath.Join(dir, "two"), "2 disk files"},
		"nothing there": {filepath.Join(dir, "none"), "no disk image"},
	} {
		_, err := importer.New().Import(context.Background(), importer.FileSource{Path: tc.path, Name: "claim ns/src"},
			importer.Target{Path: filepath.Join(t.TempDir(), "disk.img"), Size: 8 << 20})
		if importer.ReasonOf(err) != importer.ReasonRefused || importer.IsRetryable(err) || !strings.Contains(err.Error(), tc.want) ||
			!strings.Contains(err.Error(), "claim ns/src") {
			t.Errorf("%s: %v, want a final refusal naming the source and saying %q", name, err, tc.want)
		}
	}
}
