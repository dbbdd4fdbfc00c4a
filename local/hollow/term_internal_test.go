package hollow

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// The termination message goes into a regular file only: a link is not
// followed and a fifo neither blocks nor is written.
func TestWriteExistingRefusesLinksAndFifos(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere")
	if err := os.WriteFile(target, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	writeExisting(link, "reason\n")
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Errorf("the link was followed: %q", b)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	writeExisting(fifo, "reason\n") // returns: no reader, no block
	file := filepath.Join(dir, "termination-log")
	if err := os.WriteFile(file, []byte("an older, longer message"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeExisting(file, "reason\n")
	if b, _ := os.ReadFile(file); string(b) != "reason\n" {
		t.Errorf("termination message %q, want %q", b, "reason\n")
	}
}
