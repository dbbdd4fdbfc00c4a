// Package unpacktest makes image layers and images of listed entries, and
// describes folders, for tests of what unpacks images.
package unpacktest

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Entry is one entry of a test layer.
type Entry struct {
	Name    string
	Type    byte // a tar.Type* flag
	Mode    int64
	UID     int    // also the group
	Content string // or the link's target
}

// Dir is a folder entry.
func Dir(name string, mode int64) Entry { return Entry{Name: name, Type: tar.TypeDir, Mode: mode} }

// File is a regular file entry.
func File(name string, mode int64, uid int, content string) Entry {
	return Entry{Name: name, Type: tar.TypeReg, Mode: mode, UID: uid, Content: content}
}

// Symlink is a symbolic link entry.
func Symlink(name, target string) Entry {
	return Entry{Name: name, Type: tar.TypeSymlink, Mode: 0o777, Content: target}
}

// Hardlink is a hard link entry.
func Hardlink(name, target string) Entry {
	return Entry{Name: name, Type: tar.TypeLink, Mode: 0o644, Content: target}
}

// Tar is the tar stream of entries.
func Tar(t testing.TB, entries ...Entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.Name, Typeflag: e.Type, Mode: e.Mode, Uid: e.UID, Gid: e.UID}
		switch e.Type {
		case tar.TypeReg:
			h.Size = int64(len(e.Content))
		case tar.TypeSymlink, tar.TypeLink:
			h.Linkname = e.Content
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if e.Type == tar.TypeReg {
			if _, err := tw.Write([]byte(e.Content)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Layer is a layer of entries.
func Layer(t testing.TB, entries ...Entry) v1.Layer {
	t.Helper()
	b := Tar(t, entries...)
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// Image is an image of layers of entries, the first lowest.
func Image(t testing.TB, layers ...[]Entry) v1.Image {
	t.Helper()
	var ls []v1.Layer
	for _, entries := range layers {
		ls = append(ls, Layer(t, entries...))
	}
	img, err := mutate.AppendLayers(empty.Image, ls...)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// Removable lets the test's cleanup remove dir's read-only folders when
// the test does not run as root.
func Removable(t testing.TB, dir string) {
	t.Cleanup(func() {
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				_ = os.Chmod(p, 0o755)
			}
			return nil
		})
	})
}

// Tree describes every entry below dir, by path relative to it: type and
// mode, owner (when root), link count and content, or link target.
func Tree(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st := info.Sys().(*syscall.Stat_t)
		desc := info.Mode().String()
		if os.Geteuid() == 0 {
			desc += fmt.Sprintf(" %d:%d", st.Uid, st.Gid)
		}
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			desc += " -> " + target
		case info.Mode().IsRegular():
			b, _ := os.ReadFile(p)
			desc += fmt.Sprintf(" n%d %q", st.Nlink, b)
		}
		out[rel] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
