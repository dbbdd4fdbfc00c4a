package handler

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/virtkit/virtkit/virt/launcher/contract"
)

func TestReadyWatch(t *testing.T) {
	woken := make(chan types.NamespacedName, 4)
	w := newReadyWatch(func(k types.NamespacedName) { woken <- k })
	defer w.close()
	key := types.NamespacedName{Namespace: "default", Name: "vm1"}
	dir := t.TempDir()

	for range 3 { // a look every 0.5 s until it comes: one entry
		if !w.wait(key, dir, dir) {
			t.Fatal("no watch on a launcher folder")
		}
	}
	w.mu.Lock()
	for wd, as := range w.waits {
		if len(as) != 1 {
			t.Errorf("watch %d: %d entries after three waits, want 1", wd, len(as))
		}
	}
	w.mu.Unlock()
	// Other files do not wake it; the ready file, published by rename, does.
	if err := os.WriteFile(filepath.Join(dir, "other"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, ".ready.tmp")
	if err := os.WriteFile(tmp, []byte("qemu:///session\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, contract.ReadyFile)); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-woken:
		if got != key {
			t.Errorf("woke %v, want %v", got, key)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the ready file woke nothing")
	}
	// Its one watch done, the instance is gone.
	w.mu.Lock()
	open := w.file != nil
	w.mu.Unlock()
	if open {
		t.Error("the inotify instance stays open with nothing watched")
	}

	// A folder that goes ends its watch and the instance.
	gone := filepath.Join(t.TempDir(), "pod")
	if err := os.Mkdir(gone, 0o755); err != nil {
		t.Fatal(err)
	}
	if !w.wait(key, gone, gone) {
		t.Fatal("no watch")
	}
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		w.mu.Lock()
		open, n := w.file != nil, len(w.waits)
		w.mu.Unlock()
		if !open && n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the folder went: instance open %v, %d watches", open, n)
		}
		time.Sleep(10 * time.Millisecond)
	}

	// A link in place of the folder is not followed.
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	if w.wait(key, link, link) {
		t.Error("a symbolic link to a folder was watched")
	}

	// Closed, it watches nothing.
	if err := w.close(); err != nil {
		t.Fatal(err)
	}
	if w.wait(key, dir, dir) {
		t.Error("a closed watch watched")
	}
	select {
	case k := <-woken:
		t.Errorf("woke %v after the first wake", k)
	default:
	}
}

// Before the node made the launcher's folder, its nearest parent below the
// pods folder is watched for the next folder of the path, and each wake
// lets the handler wait deeper.
func TestReadyWatchFolderToCome(t *testing.T) {
	woken := make(chan types.NamespacedName, 4)
	w := newReadyWatch(func(k types.NamespacedName) { woken <- k })
	defer w.close()
	key := types.NamespacedName{Namespace: "default", Name: "vm1"}
	pods := t.TempDir()
	dir := filepath.Join(pods, "uid", "volumes")
	wake := func(step string, mk func() error) {
		t.Helper()
		if !w.wait(key, dir, pods) {
			t.Fatalf("%s: no watch", step)
		}
		if err := mk(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-woken:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: no wake", step)
		}
	}
	wake("pod folder", func() error { return os.Mkdir(filepath.Join(pods, "uid"), 0o755) })
	wake("volumes folder", func() error { return os.Mkdir(dir, 0o755) })
	wake("ready file", func() error { return os.WriteFile(filepath.Join(dir, contract.ReadyFile), nil, 0o644) })
	if w.wait(key, filepath.Join(t.TempDir(), "elsewhere", "x"), pods) {
		t.Error("a folder outside the pods folder was waited for")
	}
}
