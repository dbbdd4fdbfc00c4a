package node

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestMakeSubPath: missing folders get the volume root's mode (not the
// umask's), existing ones are kept, and no link is followed.
func TestMakeSubPath(t *testing.T) {
	root := t.TempDir()
	if err := os.Chmod(root, 0o777|os.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	if err := makeSubPath(root, "state/tpm"); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"state", "state/tpm"} {
		st, err := os.Stat(filepath.Join(root, d))
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Mode() & (os.ModePerm | os.ModeSetgid); got != 0o777|os.ModeSetgid {
			t.Errorf("%s: mode %v, want the root's", d, got)
		}
	}
	if err := makeSubPath(root, "state/tpm"); err != nil {
		t.Errorf("again: %v", err)
	}
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	err := makeSubPath(root, "link/inside")
	if err == nil || !strings.Contains(err.Error(), "links are not followed") {
		t.Errorf("through a link: %v, want a refusal", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "inside")); !os.IsNotExist(err) {
		t.Errorf("made a folder through the link: %v", err)
	}
	if err := makeSubPath(root, "../up"); err == nil {
		t.Error("a subPath leaving the volume was made")
	}
}

// TestOpenSubPath: a subPath is resolved as a kubelet resolves it (links
// that stay in the volume are followed, one that leaves it is refused) and
// opened with no link followed, so a link swapped in after the check is
// refused too.
func TestOpenSubPath(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"state/tpm", "other"} {
		must(t, os.MkdirAll(filepath.Join(root, d), 0o755))
	}
	must(t, os.WriteFile(filepath.Join(root, "state", "f"), []byte("x"), 0o644))
	must(t, os.Symlink("state", filepath.Join(root, "in")))
	must(t, os.Symlink("/etc", filepath.Join(root, "out")))
	must(t, os.Symlink("../..", filepath.Join(root, "state", "up")))
	for _, c := range []struct {
		sub, want, err string
	}{
		{sub: "state/tpm", want: "state/tpm"},
		{sub: "state/f", want: "state/f"},
		{sub: "in/tpm", want: "state/tpm"},
		{sub: ".", want: "."},
		{sub: "out", err: "leads outside the volume"},
		{sub: "state/up", err: "leads outside the volume"},
		{sub: "../x", err: "must be a relative path inside the volume"},
		{sub: "/etc", err: "must be a relative path inside the volume"},
		{sub: "missing", err: "no such file"},
	} {
		fd, err := openSubPath(root, c.sub)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), c.sub) {
				t.Errorf("openSubPath(%q) = %v, want an error naming it: %s", c.sub, err, c.err)
			}
			if err == nil {
				unix.Close(fd)
			}
			continue
		}
		if err != nil {
			t.Errorf("openSubPath(%q): %v", c.sub, err)
			continue
		}
		got, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
		unix.Close(fd)
		if want := filepath.Join(root, c.want); err != nil || got != want {
			t.Errorf("openSubPath(%q) opened %q (%v), want %q", c.sub, got, err, want)
		}
	}

	// What the pod can do between the check and the open: the folder
	// checked is now a link (here, one that stays in the volume, and
	// still refused).
	if fd, err := openBeneath(root, "in/tpm"); err == nil {
		unix.Close(fd)
		t.Error("a path through a link was opened")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
