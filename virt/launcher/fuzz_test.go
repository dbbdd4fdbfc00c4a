package launcher_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/virtkit/virtkit/virt/confined"
	"github.com/virtkit/virtkit/virt/launcher"
)

// FuzzFolderFiles plays a launcher pod that writes what it likes where the
// node reads its exit and ready files: a file of any content, a link (to a
// file of that content or to /dev/zero), a FIFO, a folder. Whatever it
// wrote, the node's reads return (a FIFO or a device is never opened), read
// at most their bound, and agree with encoding/json on a regular file. Run
// with
//
//	go test ./virt/launcher/ -run '^$' -fuzz FuzzFolderFiles -fuzztime 60s
func FuzzFolderFiles(f *testing.F) {
	f.Add(uint8(0), []byte(`{"code":0,"reason":"guest shut down"}`+"\n"))
	f.Add(uint8(0), []byte(`{"code":3,"reason":"libvirtd died","extra":[1,2]}`))
	f.Add(uint8(0), []byte(`{"code":"x"}`))
	f.Add(uint8(1), []byte(`{"code":0,"reason":"through a link"}`))
	f.Add(uint8(2), []byte{})
	f.Add(uint8(3), []byte{})
	f.Add(uint8(4), []byte{})
	f.Add(uint8(0), append([]byte(`{"code":0,"reason":"`), bytes.Repeat([]byte("a"), 70<<10)...))
	f.Fuzz(func(t *testing.T, kind uint8, data []byte) {
		dir := t.TempDir()
		l := launcher.Layout{Root: filepath.Join(dir, "folder")}
		if err := os.Mkdir(l.Root, 0o700); err != nil {
			t.Fatal(err)
		}
		outside := filepath.Join(dir, "outside")
		if err := os.WriteFile(outside, data, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{l.ExitFile(), l.ReadyFile()} {
			var err error
			switch kind % 5 {
			case 0:
				err = os.WriteFile(name, data, 0o600)
			case 1:
				err = os.Symlink(outside, name)
			case 2:
				err = syscall.Mkfifo(name, 0o600)
			case 3:
				err = os.Mkdir(name, 0o700)
			case 4:
				err = os.Symlink("/dev/zero", name)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		folder, err := launcher.OpenFolder(l)
		if err != nil {
			t.Fatal(err)
		}
		defer folder.Close()

		r, ended, err := folder.Result()
		ready, rerr := folder.Ready()
		if kind%5 != 0 {
			if ended || err == nil || ready || rerr == nil {
				t.Fatalf("kind %d: result %v ended %t (%v), ready %t (%v): want both refused", kind%5, r, ended, err, ready, rerr)
			}
			if !errors.Is(err, confined.ErrNotRegular) && !errors.Is(err, syscall.ELOOP) && !errors.Is(err, syscall.EXDEV) {
				t.Errorf("kind %d: result error %v names neither a link nor a non-regular file", kind%5, err)
			}
			return
		}
		if !ready || rerr != nil {
			t.Errorf("a regular ready file: ready %t, %v", ready, rerr)
		}
		if len(data) > 64<<10 {
			if !errors.Is(err, confined.ErrTooLarge) {
				t.Fatalf("a %d-byte exit file: %v, want ErrTooLarge", len(data), err)
			}
			return
		}
		var want launcher.Result
		jerr := json.Unmarshal(data, &want)
		if (jerr == nil) != (err == nil) || ended != (jerr == nil) {
			t.Fatalf("exit file %q: ended %t, %v; encoding/json says %v", data, ended, err, jerr)
		}
		if ended && r != want {
			t.Errorf("exit file %q: %+v, want %+v", data, r, want)
		}
	})
}
