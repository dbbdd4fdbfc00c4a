package importer_test

import (
	"archive/tar"
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/virtkit/virtkit/virt/storage/importer"
)

// member is one tar member of a test archive.
type member struct {
	name, link string
	typ        byte
	mode       int64
	body       string
}

func tarOf(t *testing.T, members ...member) []byte {
	t.Helper()
	var b bytes.Buffer
	w := tar.NewWriter(&b)
	for _, m := range members {
		h := &tar.Header{Name: m.name, Linkname: m.link, Typeflag: m.typ, Mode: m.mode, Size: int64(len(m.body))}
		if err := w.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(m.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// tree lists what is under dir: "d name mode", "f name mode body",
// "l name -> target".
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out = append(out, "l "+rel+" -> "+target)
		case fi.IsDir():
			out = append(out, "d "+rel+" "+fi.Mode().Perm().String())
		default:
			b, _ := os.ReadFile(p)
			out = append(out, "f "+rel+" "+fi.Mode().Perm().String()+" "+string(b))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestExtractArchive: an archive target gets the tar's folders, files
// with their permissions, and links, from a plain or compressed archive,
// as CDI's archive content type.
func TestExtractArchive(t *testing.T) {
	s := newServer(t)
	archive := tarOf(t,
		member{name: "./", typ: tar.TypeDir, mode: 0o755},
		member{name: "etc/", typ: tar.TypeDir, mode: 0o750},
		member{name: "etc/app.conf", typ: tar.TypeReg, mode: 0o640, body: "key=value\n"},
		member{name: "bin/run.sh", typ: tar.TypeReg, mode: 0o4755, body: "#!/bin/sh\n"},
		member{name: "current", typ: tar.TypeSymlink, link: "etc/app.conf", mode: 0o777},
		member{name: "etc/again.conf", typ: tar.TypeLink, link: "etc/app.conf"},
		member{name: "dev/null", typ: tar.TypeChar, mode: 0o666},
	)
	s.put("plain.tar", archive)
	s.put("files.tar.gz", gzipped(archive))
	want := []string{
		"d bin -rwxr-xr-x",
		"f bin/run.sh -rwxr-xr-x #!/bin/sh\n",
		"l current -> etc/app.conf",
		"d etc -rwxr-x---",
		"f etc/again.conf -rw-r----- key=value\n",
		"f etc/app.conf -rw-r----- key=value\n",
	}
	for _, name := range []string{"plain.tar", "files.tar.gz"} {
		dir := t.TempDir()
		res, err := importer.New().Import(context.Background(), s.source("/images/"+name), importer.Target{Path: dir, Size: 1 << 20, Archive: true})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.Format != importer.FormatArchive || res.VirtualSize != int64(len("key=value\n")+len("#!/bin/sh\n")) {
			t.Errorf("%s: result %+v, want a tar of %d bytes of files", name, res, len("key=value\n")+len("#!/bin/sh\n"))
		}
		if d := cmp.Diff(want, tree(t, dir)); d != "" {
			t.Errorf("%s: extracted (-want +got):\n%s", name, d)
		}
	}
}

// TestExtractArchiveRefuses: a member naming a place outside the folder,
// a write through a link leading out, files larger than the target and
// data that is no tar each fail the import with its reason, and leave
// nothing of the archive behind; what was there stays.
func TestExtractArchiveRefuses(t *testing.T) {
	s := newServer(t)
	outside := t.TempDir()
	for _, tc := range []struct {
		name    string
		archive []byte
		reason  importer.Reason
	}{
		{"dotdot", tarOf(t, member{name: "ok", typ: tar.TypeReg, mode: 0o644, body: "x"},
			member{name: "../escape", typ: tar.TypeReg, mode: 0o644, body: "x"}), importer.ReasonCorrupt},
		{"through-link", tarOf(t, member{name: "out", typ: tar.TypeSymlink, link: outside},
			member{name: "out/escape", typ: tar.TypeReg, mode: 0o644, body: "x"}), importer.ReasonWrite},
		{"too-large", tarOf(t, member{name: "a/big", typ: tar.TypeReg, mode: 0o644, body: string(make([]byte, 2048))}), importer.ReasonTooLarge},
		{"not-a-tar", []byte("just some text, no archive"), importer.ReasonUnsupportedFormat},
	} {
		s.put(tc.name, tc.archive)
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "kept"), []byte("mine"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := importer.New().Import(context.Background(), s.source("/images/"+tc.name), importer.Target{Path: dir, Size: 1024, Archive: true})
		if got := importer.ReasonOf(err); got != tc.reason {
			t.Errorf("%s: %v (reason %q), want reason %q", tc.name, err, got, tc.reason)
		}
		if d := cmp.Diff([]string{"f kept -rw------- mine"}, tree(t, dir)); d != "" {
			t.Errorf("%s: left after the failure (-want +got):\n%s", tc.name, d)
		}
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("the archive wrote outside its folder: %v", entries)
	}
	// A folder target must be a folder, not a link to one.
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	s.put("fine", tarOf(t, member{name: "f", typ: tar.TypeReg, mode: 0o644, body: "x"}))
	if _, err := importer.New().Import(context.Background(), s.source("/images/fine"), importer.Target{Path: link, Size: 1024, Archive: true}); importer.ReasonOf(err) != importer.ReasonWrite {
		t.Errorf("extracting into a symbolic link: %v, want %s", err, importer.ReasonWrite)
	}
}
