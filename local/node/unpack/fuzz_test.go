package unpack

import (
	"archive/tar"
	"bytes"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/virtkit/virtkit/local/node/unpack/unpacktest"
)

// FuzzUnpackLayer applies arbitrary tar streams, twice (a layer over
// itself), to an image root next to a folder it must not touch. Whatever
// the stream (paths with "..", links out of the root and writes through
// them, hard links to outside, whiteouts of "..", device nodes), unpacking
// returns and nothing outside the root changes. Streams that declare more
// than 4 MiB of content are skipped, to keep the fuzzer's disk bounded. Run
// with
//
//	go test ./local/node/unpack/ -run '^$' -fuzz FuzzUnpackLayer -fuzztime 60s
func FuzzUnpackLayer(f *testing.F) {
	f.Add(unpacktest.Tar(f, unpacktest.Dir("etc", 0o755), unpacktest.File("etc/hostname", 0o644, 0, "vm\n"), unpacktest.Symlink("bin", "usr/bin")))
	f.Add(unpacktest.Tar(f, unpacktest.File("../outside/sentinel", 0o644, 0, "overwritten")))
	f.Add(unpacktest.Tar(f, unpacktest.Symlink("esc", "../outside"), unpacktest.File("esc/sentinel", 0o644, 0, "through a link")))
	f.Add(unpacktest.Tar(f, unpacktest.Symlink("abs", "/"), unpacktest.File("abs/tmp/x", 0o644, 0, "absolute")))
	f.Add(unpacktest.Tar(f, unpacktest.Hardlink("hl", "../outside/sentinel")))
	f.Add(unpacktest.Tar(f, unpacktest.Symlink("s", "../outside/sentinel"), unpacktest.Hardlink("hl", "s")))
	f.Add(unpacktest.Tar(f, unpacktest.File(".wh...", 0o644, 0, ""), unpacktest.File("a/.wh..wh..opq", 0o644, 0, "")))
	f.Add(unpacktest.Tar(f, unpacktest.Symlink("d", "../outside"), unpacktest.File("d/.wh.sentinel", 0o644, 0, ""), unpacktest.File("d/.wh..wh..opq", 0o644, 0, "")))
	f.Add(unpacktest.Tar(f, unpacktest.Entry{Name: "dev/null", Type: tar.TypeChar, Mode: 0o666}, unpacktest.Dir(".", 0o700)))
	f.Fuzz(func(t *testing.T, stream []byte) {
		if declaresOver(stream, 4<<20) {
			return // more than 4 MiB of content: not written, to keep the fuzzer's disk bounded
		}
		dir := t.TempDir()
		unpacktest.Removable(t, dir)
		rootDir, outside := filepath.Join(dir, "root"), filepath.Join(dir, "outside")
		for _, d := range []string{rootDir, outside} {
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(outside, "sentinel"), []byte("untouched"), 0o644); err != nil {
			t.Fatal(err)
		}
		before := unpacktest.Tree(t, dir)
		delete(before, "root")
		root, err := os.OpenRoot(rootDir)
		if err != nil {
			t.Fatal(err)
		}
		defer root.Close()
		u := &unpacker{root: root, chown: os.Geteuid() == 0, dirModes: map[string]fs.FileMode{}}
		for range 2 {
			if err := u.layer(bytes.NewReader(stream)); err != nil {
				break
			}
		}
		_ = u.finish()
		if err := os.Chmod(rootDir, 0o755); err != nil {
			t.Fatal(err)
		}
		after := unpacktest.Tree(t, dir)
		for p := range after {
			if p == "root" || strings.HasPrefix(p, "root/") {
				delete(after, p)
			}
		}
		if d := cmp.Diff(before, after); d != "" {
			t.Errorf("unpacking changed what lies outside the image root (-before +after):\n%s", d)
		}
	})
}

// declaresOver tells whether the stream's headers, read as far as the tar
// reader gets, declare more than limit bytes of content (a sparse entry
// declares its whole size).
func declaresOver(stream []byte, limit int64) bool {
	tr := tar.NewReader(bytes.NewReader(stream))
	var n int64
	for {
		h, err := tr.Next()
		if err != nil {
			return false
		}
		if n += max(h.Size, 0); n > limit || n < 0 {
			return true
		}
		if _, err := io.Copy(io.Discard, tr); err != nil {
			return false
		}
	}
}
