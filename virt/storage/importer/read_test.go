package importer

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// bytesSource is an in-memory Source.
type bytesSource struct {
	name string
	b    []byte
}

func (s bytesSource) Open(context.Context) (io.ReadCloser, int64, error) {
	return io.NopCloser(bytes.NewReader(s.b)), int64(len(s.b)), nil
}

func (s bytesSource) String() string { return s.name }

// A reader that fails after some bytes.
type failingReader struct {
	r   io.Reader
	err error
}

func (f *failingReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF {
		return n, f.err
	}
	return n, err
}

type failingSource struct{ b []byte }

func (s failingSource) Open(context.Context) (io.ReadCloser, int64, error) {
	return io.NopCloser(&failingReader{bytes.NewReader(s.b), io.ErrUnexpectedEOF}), int64(len(s.b)) + 1, nil
}

func (failingSource) String() string { return "failing" }

// A source that breaks off is unreachable (retryable), compressed or not;
// the partial file is removed.
func TestSourceBreaksOff(t *testing.T) {
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	_, _ = w.Write(make([]byte, 1<<20))
	_ = w.Close()
	for name, b := range map[string][]byte{"raw": bytes.Repeat([]byte{1}, 3<<20), "gzip": gz.Bytes()[:gz.Len()-4]} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "disk.img")
			_, err := New().Import(context.Background(), failingSource{b}, Target{Path: path, Size: 8 << 20})
			if !IsRetryable(err) || !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("Import: %v, want a retryable error wrapping io.ErrUnexpectedEOF", err)
			}
			if _, err := os.Lstat(path); err == nil {
				t.Error("the partial disk is left")
			}
		})
	}
}

// A link at the scratch folder is refused, not followed.
func TestScratchLink(t *testing.T) {
	dir := t.TempDir()
	elsewhere := t.TempDir()
	link := filepath.Join(dir, "scratch")
	if err := os.Symlink(elsewhere, link); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "disk.img")
	_, err := New(WithRunner(&fakeQemu{})).Import(context.Background(), bytesSource{"mem", vmdkHeader(16384)}, Target{Path: path, Size: 16 << 20, ScratchDir: link})
	if ReasonOf(err) != ReasonWrite {
		t.Fatalf("Import with a linked scratch folder: %v, want reason %q", err, ReasonWrite)
	}
	if left, _ := os.ReadDir(elsewhere); len(left) > 0 {
		t.Errorf("written through the link: %v", left)
	}
}
