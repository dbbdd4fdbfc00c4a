package node

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// tarEntry is one entry of a test layer.
type tarEntry struct {
	name    string
	typ     byte
	mode    int64
	uid     int
	content string // or the link's target
}

func dirE(name string, mode int64) tarEntry {
	return tarEntry{name: name, typ: tar.TypeDir, mode: mode}
}
func fileE(name string, mode int64, uid int, content string) tarEntry {
	return tarEntry{name: name, typ: tar.TypeReg, mode: mode, uid: uid, content: content}
}
func symlinkE(name, target string) tarEntry {
	return tarEntry{name: name, typ: tar.TypeSymlink, mode: 0o777, content: target}
}
func hardlinkE(name, target string) tarEntry {
	return tarEntry{name: name, typ: tar.TypeLink, mode: 0o644, content: target}
}

// testLayer makes a layer of entries.
func testLayer(t testing.TB, entries ...tarEntry) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: e.mode, Uid: e.uid, Gid: e.uid}
		switch e.typ {
		case tar.TypeReg:
			h.Size = int64(len(e.content))
		case tar.TypeSymlink, tar.TypeLink:
			h.Linkname = e.content
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if e.typ == tar.TypeReg {
			if _, err := tw.Write([]byte(e.content)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// testImage makes an image of layers of entries.
func testImage(t testing.TB, layers ...[]tarEntry) v1.Image {
	t.Helper()
	var ls []v1.Layer
	for _, entries := range layers {
		ls = append(ls, testLayer(t, entries...))
	}
	img, err := mutate.AppendLayers(empty.Image, ls...)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// removable lets the test's cleanup remove dir's read-only folders when
// the test does not run as root.
func removable(t testing.TB, dir string) {
	t.Cleanup(func() {
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				_ = os.Chmod(p, 0o755)
			}
			return nil
		})
	})
}

// tree describes every entry below dir: type and mode, owner (when root),
// link count and content or link target.
func tree(t testing.TB, dir string) map[string]string {
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

func TestUnpack(t *testing.T) {
	// As root (as the node runs) owners are kept and compared; as another
	// user, everything is the user's.
	owners := regexp.MustCompile(` \d+:\d+`)
	for _, tc := range []struct {
		name   string
		layers [][]tarEntry
		want   map[string]string
		err    string
	}{
		{
			name: "containerDisk",
			layers: [][]tarEntry{{
				tarEntry{name: "disk/", typ: tar.TypeDir, mode: 0o555, uid: 107},
				fileE("disk/disk.qcow2", 0o440, 107, "qcow2"),
			}},
			want: map[string]string{
				"disk":            "dr-xr-xr-x 107:107",
				"disk/disk.qcow2": `-r--r----- 107:107 n1 "qcow2"`,
			},
		},
		{
			name: "files, folders and links",
			layers: [][]tarEntry{{
				dirE("./", 0o755),
				dirE("./a/", 0o750),
				fileE("./a/f", 0o644, 1000, "x"),
				symlinkE("a/l", "f"),
				hardlinkE("a/h", "a/f"),
				fileE("/b/c", 0o600, 0, "absolute names are relative to the root"),
				fileE("s", 0o4755, 0, "setuid"),
				{name: "dev/null", typ: tar.TypeChar, mode: 0o666},
				dirE("usr/lib/", 0o755),
				symlinkE("lib", "usr/lib"),
				fileE("lib/libc.so", 0o644, 0, "through a link inside the root"),
			}},
			want: map[string]string{
				"a":               "drwxr-x--- 0:0",
				"a/f":             `-rw-r--r-- 1000:1000 n2 "x"`,
				"a/h":             `-rw-r--r-- 1000:1000 n2 "x"`,
				"a/l":             "Lrwxrwxrwx 0:0 -> f",
				"b":               "drwxr-xr-x 0:0",
				"b/c":             `-rw------- 0:0 n1 "absolute names are relative to the root"`,
				"s":               `urwxr-xr-x 0:0 n1 "setuid"`,
				"usr":             "drwxr-xr-x 0:0",
				"usr/lib":         "drwxr-xr-x 0:0",
				"usr/lib/libc.so": `-rw-r--r-- 0:0 n1 "through a link inside the root"`,
				"lib":             "Lrwxrwxrwx 0:0 -> usr/lib",
			},
		},
		{
			name: "upper layers replace, whiteouts remove",
			layers: [][]tarEntry{
				{fileE("a/f", 0o644, 0, "1"), fileE("a/g", 0o644, 0, "1"), fileE("d/x", 0o644, 0, "1"), fileE("e/y", 0o644, 0, "1")},
				{fileE("a/.wh.f", 0o644, 0, ""), fileE("a/g", 0o600, 0, "2"), fileE(".wh.d", 0o644, 0, ""), fileE("e", 0o644, 0, "a file now")},
			},
			want: map[string]string{
				"a":   "drwxr-xr-x 0:0",
				"a/g": `-rw------- 0:0 n1 "2"`,
				"e":   `-rw-r--r-- 0:0 n1 "a file now"`,
			},
		},
		{
			name: "an opaque folder hides the lower layers' entries, not its own",
			layers: [][]tarEntry{
				{fileE("d/x", 0o644, 0, "1"), fileE("d/sub/y", 0o644, 0, "1"), fileE("keep", 0o644, 0, "1")},
				{fileE("d/z", 0o644, 0, "2"), fileE("d/.wh..wh..opq", 0o644, 0, ""), fileE("d/w", 0o644, 0, "2")},
			},
			want: map[string]string{
				"d":    "drwxr-xr-x 0:0",
				"d/z":  `-rw-r--r-- 0:0 n1 "2"`,
				"d/w":  `-rw-r--r-- 0:0 n1 "2"`,
				"keep": `-rw-r--r-- 0:0 n1 "1"`,
			},
		},
		{
			name: "a whiteout does not hide its own layer's entry",
			layers: [][]tarEntry{
				{fileE("a", 0o644, 0, "1")},
				{fileE("b", 0o644, 0, "2"), fileE(".wh.b", 0o644, 0, ""), fileE(".wh.a", 0o644, 0, "")},
			},
			want: map[string]string{"b": `-rw-r--r-- 0:0 n1 "2"`},
		},
		{
			name:   "a path above the root",
			layers: [][]tarEntry{{fileE("../x", 0o644, 0, "out")}},
			err:    "leaves the image's root",
		},
		{
			name:   "a path that climbs out",
			layers: [][]tarEntry{{fileE("a/../../x", 0o644, 0, "out")}},
			err:    "leaves the image's root",
		},
		{
			name:   "a hard link to outside",
			layers: [][]tarEntry{{hardlinkE("h", "../../etc/passwd")}},
			err:    "leaves the image's root",
		},
		{
			name:   "through a relative link out of the root",
			layers: [][]tarEntry{{symlinkE("up", "../../../.."), fileE("up/tmp/x", 0o644, 0, "out")}},
			err:    "up/tmp/x",
		},
		{
			name:   "through an absolute link",
			layers: [][]tarEntry{{symlinkE("etc", "/etc"), fileE("etc/virtkit-unpack-test", 0o644, 0, "out")}},
			err:    "etc/virtkit-unpack-test",
		},
		{
			name:   "a whiteout through a link out of the root",
			layers: [][]tarEntry{{symlinkE("up", "../..")}, {fileE("up/.wh.x", 0o644, 0, "")}},
			err:    "up/.wh.x",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The root sits two levels down, so that a climbing link
			// would land in a folder the test owns.
			dir := filepath.Join(t.TempDir(), "a", "root")
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			removable(t, dir)
			err := unpackImage(context.Background(), testImage(t, tc.layers...), dir)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("unpack: %v, want an error with %q", err, tc.err)
				}
				for _, p := range []string{"/etc/virtkit-unpack-test", filepath.Join(dir, "..", "..", "x"), filepath.Join(dir, "..", "..", "tmp", "x")} {
					if _, err := os.Lstat(p); err == nil {
						t.Errorf("%s was written outside the root", p)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{}
			for p, desc := range tc.want {
				if os.Geteuid() != 0 {
					desc = owners.ReplaceAllString(desc, "")
				}
				want[p] = desc
			}
			if diff := cmp.Diff(want, tree(t, dir)); diff != "" {
				t.Errorf("unpacked (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCleanPath(t *testing.T) {
	for in, want := range map[string]string{
		"a/b": "a/b", "./a/": "a", "/a//b/../c": "a/c", ".": ".", "./": ".", "/": ".",
		"..": "!", "../a": "!", "a/../..": "!", "/../a": "!",
	} {
		got, err := cleanPath(in)
		if err != nil {
			got = "!"
		}
		if got != want {
			t.Errorf("cleanPath(%q) = %q (%v), want %q", in, got, err, want)
		}
	}
}
