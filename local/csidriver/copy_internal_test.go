package csidriver

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// A volume is a pod's: its copy keeps links as links (never what they
// point at), keeps holes, modes and FIFOs, and drops sockets.
func TestCopyTreeKeepsLinksHolesAndModes(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "host-secret")
	must(t, os.WriteFile(secret, []byte("host only"), 0o600))
	src := filepath.Join(dir, "src")
	must(t, os.MkdirAll(filepath.Join(src, "sub"), 0o751))
	must(t, os.WriteFile(filepath.Join(src, "sub", "file"), []byte("guest data"), 0o640))
	must(t, os.Symlink(secret, filepath.Join(src, "link-out")))
	must(t, os.Symlink("/", filepath.Join(src, "sub", "root")))
	must(t, unix.Mkfifo(filepath.Join(src, "fifo"), 0o600))
	sparse := filepath.Join(src, "disk.img")
	f, err := os.Create(sparse)
	must(t, err)
	must(t, f.Truncate(1<<30))
	_, err = f.WriteAt([]byte("end"), 1<<30-3)
	must(t, err)
	must(t, f.Close())

	dst := filepath.Join(dir, "dst")
	must(t, copyTree(src, dst))

	if got, err := os.Readlink(filepath.Join(dst, "link-out")); err != nil || got != secret {
		t.Errorf("link-out: %q, %v; want a link to %s", got, err, secret)
	}
	if got, err := os.Readlink(filepath.Join(dst, "sub", "root")); err != nil || got != "/" {
		t.Errorf("sub/root: %q, %v; want a link to /", got, err)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "sub", "file")); err != nil || string(b) != "guest data" {
		t.Errorf("sub/file: %q, %v", b, err)
	}
	for path, want := range map[string]os.FileMode{"sub": os.ModeDir | 0o751, "sub/file": 0o640, "fifo": os.ModeNamedPipe | 0o600} {
		st, err := os.Lstat(filepath.Join(dst, path))
		if err != nil || st.Mode() != want {
			t.Errorf("%s: mode %v, %v; want %v", path, st.Mode(), err, want)
		}
	}
	var st unix.Stat_t
	must(t, unix.Stat(filepath.Join(dst, "disk.img"), &st))
	if st.Size != 1<<30 || st.Blocks*512 > 1<<20 {
		t.Errorf("disk.img: size %d, %d bytes allocated; want 1 GiB with holes kept", st.Size, st.Blocks*512)
	}
	b := make([]byte, 3)
	g, err := os.Open(filepath.Join(dst, "disk.img"))
	must(t, err)
	defer g.Close()
	if _, err := g.ReadAt(b, 1<<30-3); err != nil || string(b) != "end" {
		t.Errorf("disk.img's last bytes: %q, %v", b, err)
	}
}

// A source that is a link is refused, not followed.
func TestCopyTreeRefusesLinkedRoot(t *testing.T) {
	dir := t.TempDir()
	must(t, os.Symlink("/etc", filepath.Join(dir, "src")))
	if err := copyTree(filepath.Join(dir, "src"), filepath.Join(dir, "dst")); err == nil {
		t.Fatal("copyTree followed a link at its root")
	}
	if _, err := os.Lstat(filepath.Join(dir, "dst")); err == nil {
		t.Error("copyTree left a copy behind")
	}
}

func TestIDs(t *testing.T) {
	for name, want := range map[string]string{
		"pvc-0c1b1b2e-1111-4a4a-8888-123456789abc": "pvc-0c1b1b2e-1111-4a4a-8888-123456789abc",
		"snapshot-abc": "snapshot-abc",
	} {
		if got := idOf(name); got != want {
			t.Errorf("idOf(%q) = %q, want %q", name, got, want)
		}
	}
	for _, name := range []string{"../etc", "A Name With Spaces", "x-abc", "", "a/b"} {
		id := idOf(name)
		if id == name || !validID(id) || id != idOf(name) {
			t.Errorf("idOf(%q) = %q: want a stable digest ID", name, id)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
