package node

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
