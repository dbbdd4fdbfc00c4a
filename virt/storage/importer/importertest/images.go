package importertest

import (
	"bytes"
	"compress/gzip"
	"os"
	"slices"
	"testing"

	"github.com/ulikunitz/xz"

	"github.com/virtkit/virtkit/virt/storage"
)

// Markers that Disk holds, and where.
const (
	StartMarker = "virtkit importer test: start of the disk"
	MidMarker   = "virtkit importer test: 5 MiB into the disk"
	MidOffset   = 5 << 20
	// DiskSize is the length of Disk.
	DiskSize = 6 << 20
)

// Disk is a raw disk image of DiskSize bytes: zeros but for StartMarker at
// offset 0 and MidMarker at MidOffset.
func Disk() []byte {
	b := make([]byte, DiskSize)
	copy(b, StartMarker)
	copy(b[MidOffset:], MidMarker)
	return b
}

// Gzip compresses b.
func Gzip(t testing.TB, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	w := gzip.NewWriter(&out)
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// XZ compresses b.
func XZ(t testing.TB, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	w, err := xz.NewWriter(&out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// QCOW2 is an empty qcow2 image (storage.WriteQCOW2) of o.Size.
func QCOW2(t testing.TB, o storage.QCOW2Options) []byte {
	t.Helper()
	var w sliceWriter
	n, err := storage.WriteQCOW2(&w, o)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, n)
	copy(b, w.b)
	return b
}

// sliceWriter is an io.WriterAt growing a byte slice.
type sliceWriter struct{ b []byte }

func (w *sliceWriter) WriteAt(p []byte, off int64) (int, error) {
	if end := int(off) + len(p); end > len(w.b) {
		w.b = append(w.b, make([]byte, end-len(w.b))...)
	}
	return copy(w.b[off:], p), nil
}

// CheckDisk checks that the file at path is Disk extended with zeros to
// size bytes.
func CheckDisk(t testing.TB, path string, size int64) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the disk: %v", err)
	}
	if int64(len(got)) != size {
		t.Fatalf("the disk is %d bytes long, want %d", len(got), size)
	}
	want := Disk()
	if !bytes.Equal(got[:len(want)], want) {
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("the disk differs from the image at offset %d: %q, want %q", i, got[i:min(i+16, len(got))], want[i:min(i+16, len(want))])
			}
		}
	}
	if i := slices.IndexFunc(got[len(want):], func(b byte) bool { return b != 0 }); i >= 0 {
		t.Fatalf("the disk's extension holds data at offset %d", len(want)+i)
	}
}
