package launcher

import (
	"os"
	"path/filepath"
	"testing"
)

func TestPublishLeavesOnlyTheWholeFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ready")
	if err := publish(path, []byte("qemu:///system?socket=/x\n")); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "qemu:///system?socket=/x\n" {
		t.Fatalf("ready file: %q, %v", b, err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o644 {
		t.Fatalf("ready file mode: %v, %v", st.Mode(), err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		t.Fatalf("folder holds %v (%v), want only the ready file", entries, err)
	}
	if err := publish(filepath.Join(dir, "missing", "ready"), nil); err == nil {
		t.Fatal("publish into a missing folder succeeded")
	}
}
