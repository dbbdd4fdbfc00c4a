package importer_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/virtkit/virtkit/virt/storage/importer"
	"github.com/virtkit/virtkit/virt/storage/importer/importertest"
)

// TestChecksum: an image with the expected checksum imports and verifies;
// one without fails for good with ReasonChecksum and leaves no target.
func TestChecksum(t *testing.T) {
	s := newServer(t)
	img := importertest.Gzip(t, importertest.Disk())
	s.put("disk.gz", img)
	sum := sha256.Sum256(img)
	good := "sha256:" + hex.EncodeToString(sum[:])
	bad := "sha256:" + hex.EncodeToString(make([]byte, 32))

	path := filepath.Join(t.TempDir(), "disk.img")
	src, err := importer.NewChecksumSource(s.source("/images/disk.gz"), good)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := importer.New().Import(context.Background(), src, importer.Target{Path: path, Size: 8 << 20}); err != nil {
		t.Fatalf("Import with the right checksum: %v", err)
	}
	if err := src.Verify(); err != nil {
		t.Errorf("Verify after a full read: %v", err)
	}

	path = filepath.Join(t.TempDir(), "disk.img")
	src, err = importer.NewChecksumSource(s.source("/images/disk.gz"), bad)
	if err != nil {
		t.Fatal(err)
	}
	_, err = importer.New().Import(context.Background(), src, importer.Target{Path: path, Size: 8 << 20})
	if importer.ReasonOf(err) != importer.ReasonChecksum || importer.IsRetryable(err) {
		t.Fatalf("Import with a wrong checksum: %v, want a final ChecksumError", err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("target left after a checksum mismatch: %v", err)
	}

	for _, spec := range []string{"sha256", "crc32:00", "sha256:zz", "md5:00"} {
		if _, err := importer.NewChecksumSource(s.source("/images/disk.gz"), spec); err == nil {
			t.Errorf("NewChecksumSource(%q): no error", spec)
		}
	}
}
