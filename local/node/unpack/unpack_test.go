package unpack

import (
	"archive/tar"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/virtkit/virtkit/local/node/unpack/unpacktest"
)

func TestImage(t *testing.T) {
	// As root (as the node runs) owners are kept and compared; as another
	// user, everything is the user's.
	owners := regexp.MustCompile(` \d+:\d+`)
	for _, tc := range []struct {
		name   string
		layers [][]unpacktest.Entry
		want   map[string]string
		err    string
	}{
		{
			name: "containerDisk",
			layers: [][]unpacktest.Entry{{
				unpacktest.Entry{Name: "disk/", Type: tar.TypeDir, Mode: 0o555, UID: 107},
				unpacktest.File("disk/disk.qcow2", 0o440, 107, "qcow2"),
			}},
			want: map[string]string{
				"disk":            "dr-xr-xr-x 107:107",
				"disk/disk.qcow2": `-r--r----- 107:107 n1 "qcow2"`,
			},
		},
		{
			name: "files, folders and links",
			layers: [][]unpacktest.Entry{{
				unpacktest.Dir("./", 0o755),
				unpacktest.Dir("./a/", 0o750),
				unpacktest.File("./a/f", 0o644, 1000, "x"),
				unpacktest.Symlink("a/l", "f"),
				unpacktest.Hardlink("a/h", "a/f"),
				unpacktest.File("/b/c", 0o600, 0, "absolute names are relative to the root"),
				unpacktest.File("s", 0o4755, 0, "setuid"),
				{Name: "dev/null", Type: tar.TypeChar, Mode: 0o666},
				unpacktest.Dir("usr/lib/", 0o755),
				unpacktest.Symlink("lib", "usr/lib"),
				unpacktest.File("lib/libc.so", 0o644, 0, "through a link inside the root"),
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
			layers: [][]unpacktest.Entry{
				{unpacktest.File("a/f", 0o644, 0, "1"), unpacktest.File("a/g", 0o644, 0, "1"), unpacktest.File("d/x", 0o644, 0, "1"), unpacktest.File("e/y", 0o644, 0, "1")},
				{unpacktest.File("a/.wh.f", 0o644, 0, ""), unpacktest.File("a/g", 0o600, 0, "2"), unpacktest.File(".wh.d", 0o644, 0, ""), unpacktest.File("e", 0o644, 0, "a file now")},
			},
			want: map[string]string{
				"a":   "drwxr-xr-x 0:0",
				"a/g": `-rw------- 0:0 n1 "2"`,
				"e":   `-rw-r--r-- 0:0 n1 "a file now"`,
			},
		},
		{
			name: "an opaque folder hides the lower layers' entries, not its own",
			layers: [][]unpacktest.Entry{
				{unpacktest.File("d/x", 0o644, 0, "1"), unpacktest.File("d/sub/y", 0o644, 0, "1"), unpacktest.File("keep", 0o644, 0, "1")},
				{unpacktest.File("d/z", 0o644, 0, "2"), unpacktest.File("d/.wh..wh..opq", 0o644, 0, ""), unpacktest.File("d/w", 0o644, 0, "2")},
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
			layers: [][]unpacktest.Entry{
				{unpacktest.File("a", 0o644, 0, "1")},
				{unpacktest.File("b", 0o644, 0, "2"), unpacktest.File(".wh.b", 0o644, 0, ""), unpacktest.File(".wh.a", 0o644, 0, "")},
			},
			want: map[string]string{"b": `-rw-r--r-- 0:0 n1 "2"`},
		},
		{
			name:   "a path above the root",
			layers: [][]unpacktest.Entry{{unpacktest.File("../x", 0o644, 0, "out")}},
			err:    "leaves the image's root",
		},
		{
			name:   "a path that climbs out",
			layers: [][]unpacktest.Entry{{unpacktest.File("a/../../x", 0o644, 0, "out")}},
			err:    "leaves the image's root",
		},
		{
			name:   "a hard link to outside",
			layers: [][]unpacktest.Entry{{unpacktest.Hardlink("h", "../../etc/passwd")}},
			err:    "leaves the image's root",
		},
		{
			name:   "through a relative link out of the root",
			layers: [][]unpacktest.Entry{{unpacktest.Symlink("up", "../../../.."), unpacktest.File("up/tmp/x", 0o644, 0, "out")}},
			err:    "up/tmp/x",
		},
		{
			name:   "through an absolute link",
			layers: [][]unpacktest.Entry{{unpacktest.Symlink("etc", "/etc"), unpacktest.File("etc/virtkit-unpack-test", 0o644, 0, "out")}},
			err:    "etc/virtkit-unpack-test",
		},
		{
			name:   "a whiteout through a link out of the root",
			layers: [][]unpacktest.Entry{{unpacktest.Symlink("up", "../..")}, {unpacktest.File("up/.wh.x", 0o644, 0, "")}},
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
			unpacktest.Removable(t, dir)
			err := Image(context.Background(), unpacktest.Image(t, tc.layers...), dir)
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
			if diff := cmp.Diff(want, unpacktest.Tree(t, dir)); diff != "" {
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
