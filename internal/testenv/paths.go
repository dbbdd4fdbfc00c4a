package testenv

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// OwnerEnv is set to the test process's PID in every process testenv starts.
const OwnerEnv = "VIRTKIT_TESTENV_OWNER"

const modulePath = "github.com/virtkit/virtkit"

// RepoRoot is the checkout's root folder: the nearest parent of the working
// directory whose go.mod declares the virtkit module.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(b, []byte("module "+modulePath+"\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("testenv: no go.mod of %s above the working directory", modulePath)
		}
		dir = parent
	}
}

// Output returns a path below the repository's _output folder.
func Output(t testing.TB, elem ...string) string {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(append([]string{root, "_output"}, elem...)...)
}

// dirPrefix is the prefix of every folder testenv makes for this process.
func dirPrefix() string {
	return "/tmp/vkt-" + strconv.Itoa(os.Getpid()) + "-"
}

// Dir returns a new, short folder (unix socket paths must stay under 108
// bytes, which t.TempDir does not promise) that is removed when the test ends.
func Dir(t testing.TB) string {
	t.Helper()
	d, err := os.MkdirTemp("/tmp", filepath.Base(dirPrefix())+"*")
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	// Searchable by others, as a node's folders are: QEMU runs as the qemu
	// user (107) and must reach the images and sockets a test puts here.
	if err := os.Chmod(d, 0o711); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(d); err != nil {
			t.Errorf("testenv: remove %s: %v", d, err)
		}
	})
	return d
}

// Integration skips the test under -short and otherwise does nothing: the
// real parts are never skipped silently.
func Integration(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: runs real processes; skipped under -short")
	}
}
