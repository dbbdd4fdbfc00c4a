//go:build linux

package confined_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/virtkit/virtkit/virt/confined"
)

// host is a folder standing for the node's files, beside the folder a pod
// can write (pod): what an attack tries to reach.
type host struct {
	dir    string // the node's files
	pod    string // the folder the pod writes
	socket string // a node socket, such as the container runtime's
	secret string // a node file
	dialed chan struct{}
}

func newHost(t *testing.T) *host {
	t.Helper()
	base := t.TempDir()
	h := &host{dir: filepath.Join(base, "node"), pod: filepath.Join(base, "pod"), dialed: make(chan struct{}, 8)}
	for _, d := range []string{h.dir, h.pod, filepath.Join(h.dir, "etc")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	h.secret = filepath.Join(h.dir, "etc", "shadow")
	if err := os.WriteFile(h.secret, []byte("root:secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.socket = filepath.Join(h.dir, "runtime.sock")
	ln, err := net.Listen("unix", h.socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			h.dialed <- struct{}{}
			c.Close()
		}
	}()
	return h
}

// untouched fails the test when the node's socket was reached or its
// file changed.
func (h *host) untouched(t *testing.T) {
	t.Helper()
	select {
	case <-h.dialed:
		t.Error("the node's socket was connected to")
	case <-time.After(50 * time.Millisecond):
	}
	b, err := os.ReadFile(h.secret)
	if err != nil || string(b) != "root:secret\n" {
		t.Errorf("the node's file changed: %q, %v", b, err)
	}
}

func open(t *testing.T, dir string, mode confined.Mode) *confined.Root {
	t.Helper()
	r, err := confined.Open(dir, mode)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// The attacks a pod can make on a launcher folder it shares with the node,
// each refused in both modes, with the node untouched.
func TestAttacksAreRefused(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []confined.Mode{confined.NoSymlinks, confined.InRoot} {
		t.Run(mode.String(), func(t *testing.T) {
			t.Run("serial socket linked to a node socket", func(t *testing.T) {
				h := newHost(t)
				symlink(t, h.socket, filepath.Join(h.pod, "serial0"))
				r := open(t, h.pod, mode)
				if c, err := r.DialUnix(ctx, "serial0"); err == nil {
					c.Close()
					t.Fatal("DialUnix followed the link to the node's socket")
				}
				if _, release, err := r.SocketPath("serial0"); err == nil {
					release()
					t.Fatal("SocketPath followed the link to the node's socket")
				}
				h.untouched(t)
			})
			t.Run("relative link climbing out", func(t *testing.T) {
				h := newHost(t)
				symlink(t, "../node/runtime.sock", filepath.Join(h.pod, "vnc"))
				symlink(t, "../node/etc", filepath.Join(h.pod, "libvirt"))
				r := open(t, h.pod, mode)
				if c, err := r.DialUnix(ctx, "vnc"); err == nil {
					c.Close()
					t.Fatal("DialUnix left the folder")
				}
				if b, err := r.ReadFile("libvirt/shadow", 1<<20); err == nil {
					t.Fatalf("ReadFile read the node's file through a folder link: %q", b)
				}
				if err := r.RemoveAll("libvirt/shadow"); err == nil {
					if _, err := os.Stat(h.secret); err != nil {
						t.Fatal("RemoveAll removed the node's file through a folder link")
					}
				}
				h.untouched(t)
			})
			t.Run("dot-dot names", func(t *testing.T) {
				h := newHost(t)
				r := open(t, h.pod, mode)
				if b, err := r.ReadFile("../node/etc/shadow", 1<<20); err == nil {
					t.Fatalf("ReadFile read %q outside the folder", b)
				}
				if c, err := r.DialUnix(ctx, "../node/runtime.sock"); err == nil {
					c.Close()
					t.Fatal("DialUnix left the folder by name")
				}
				if err := r.Remove("../node/etc/shadow"); err == nil {
					t.Fatal("Remove reached outside the folder")
				}
				h.untouched(t)
			})
			t.Run("exit file linked to an endless device", func(t *testing.T) {
				h := newHost(t)
				symlink(t, "/dev/zero", filepath.Join(h.pod, "exit"))
				r := open(t, h.pod, mode)
				if b, err := r.ReadFile("exit", 4096); err == nil {
					t.Fatalf("ReadFile read %d bytes through a link to /dev/zero", len(b))
				}
			})
			t.Run("exit file that is a FIFO", func(t *testing.T) {
				h := newHost(t)
				if err := unix.Mkfifo(filepath.Join(h.pod, "exit"), 0o644); err != nil {
					t.Fatal(err)
				}
				r := open(t, h.pod, mode)
				done := make(chan error, 1)
				go func() { _, err := r.ReadFile("exit", 4096); done <- err }()
				select {
				case err := <-done:
					if !errors.Is(err, confined.ErrNotRegular) {
						t.Fatalf("ReadFile of a FIFO: %v, want ErrNotRegular", err)
					}
				case <-time.After(5 * time.Second):
					t.Fatal("ReadFile blocked on a FIFO with no writer")
				}
				go func() {
					f, err := r.OpenReadable("exit")
					if err == nil {
						f.Close()
					}
					done <- err
				}()
				select {
				case err := <-done:
					if !errors.Is(err, confined.ErrNotRegular) {
						t.Fatalf("OpenReadable of a FIFO: %v, want ErrNotRegular", err)
					}
				case <-time.After(5 * time.Second):
					t.Fatal("OpenReadable blocked on a FIFO with no writer")
				}
			})
			t.Run("a file larger than the limit", func(t *testing.T) {
				h := newHost(t)
				if err := os.WriteFile(filepath.Join(h.pod, "exit"), make([]byte, 8193), 0o644); err != nil {
					t.Fatal(err)
				}
				r := open(t, h.pod, mode)
				if _, err := r.ReadFile("exit", 8192); !errors.Is(err, confined.ErrTooLarge) {
					t.Fatalf("ReadFile: %v, want ErrTooLarge", err)
				}
			})
			t.Run("a regular file where a socket belongs", func(t *testing.T) {
				h := newHost(t)
				if err := os.WriteFile(filepath.Join(h.pod, "serial0"), nil, 0o644); err != nil {
					t.Fatal(err)
				}
				r := open(t, h.pod, mode)
				if _, err := r.DialUnix(ctx, "serial0"); !errors.Is(err, confined.ErrNotSocket) {
					t.Fatalf("DialUnix: %v, want ErrNotSocket", err)
				}
			})
			t.Run("a listener's folder swapped for a link", func(t *testing.T) {
				h := newHost(t)
				symlink(t, h.dir, filepath.Join(h.pod, "migration"))
				r := open(t, h.pod, mode)
				if ln, err := r.ListenUnix("migration/memory.sock"); err == nil {
					ln.Close()
					if _, err := os.Lstat(filepath.Join(h.dir, "memory.sock")); err == nil {
						t.Fatal("ListenUnix made a socket in the node's folder")
					}
				}
				if _, err := os.Lstat(filepath.Join(h.dir, "memory.sock")); err == nil {
					t.Fatal("a socket was made in the node's folder")
				}
			})
			t.Run("chown and chmod of a link to a node file", func(t *testing.T) {
				h := newHost(t)
				symlink(t, h.secret, filepath.Join(h.pod, "migration"))
				symlink(t, "../node/etc", filepath.Join(h.pod, "up"))
				r := open(t, h.pod, mode)
				for _, name := range []string{"migration", "up/shadow", "../node/etc/shadow"} {
					if err := r.Chown(name, 107, 107); err == nil {
						t.Errorf("Chown(%q) succeeded", name)
					}
					if err := r.Chmod(name, 0o666); err == nil {
						t.Errorf("Chmod(%q) succeeded", name)
					}
				}
				if st, err := os.Stat(h.secret); err != nil || st.Mode().Perm() != 0o600 || st.Sys().(*syscall.Stat_t).Uid != 0 {
					t.Errorf("the node's file: %v, %v", st.Mode(), err)
				}
				h.untouched(t)
			})
			t.Run("a temporary file in a folder swapped for a link", func(t *testing.T) {
				h := newHost(t)
				symlink(t, filepath.Join(h.dir, "etc"), filepath.Join(h.pod, "disks"))
				r := open(t, h.pod, mode)
				if f, name, err := r.CreateTemp("disks", ".disk.img.*"); err == nil {
					f.Close()
					if _, err := os.Lstat(filepath.Join(h.dir, "etc", filepath.Base(name))); err == nil {
						t.Fatal("CreateTemp wrote into the node's folder")
					}
				}
				if err := r.Rename("disks/shadow", "stolen"); err == nil {
					if _, err := os.Stat(h.secret); err != nil {
						t.Fatal("Rename moved the node's file")
					}
				}
				h.untouched(t)
			})
		})
	}
}

// In InRoot mode a link is read as the pod reads it: an absolute target
// starts at the root, so /var/run -> /run reaches the pod's /run, and a
// link to a node path reaches the same path inside the pod.
func TestInRootFollowsLinksAsThePodSeesThem(t *testing.T) {
	h := newHost(t)
	for _, d := range []string{"run/vkt", "var"} {
		if err := os.MkdirAll(filepath.Join(h.pod, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	symlink(t, "/run", filepath.Join(h.pod, "var", "run"))
	if err := os.WriteFile(filepath.Join(h.pod, "run/vkt/ready"), []byte("qemu:///session\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", filepath.Join(h.pod, "run/vkt/libvirt-sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
		}
	}()
	symlink(t, h.secret, filepath.Join(h.pod, "run/vkt/exit")) // the node's path, read inside the pod

	r := open(t, h.pod, confined.InRoot)
	b, err := r.ReadFile("/var/run/vkt/ready", 1024)
	if err != nil || string(b) != "qemu:///session\n" {
		t.Fatalf("ReadFile through /var/run: %q, %v", b, err)
	}
	c, err := r.DialUnix(context.Background(), "/var/run/vkt/libvirt-sock")
	if err != nil {
		t.Fatalf("DialUnix through /var/run: %v", err)
	}
	c.Close()
	if _, err := r.ReadFile("/var/run/vkt/exit", 1024); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a link to a node path: %v, want it resolved inside the pod (absent)", err)
	}
	h.untouched(t)

	// The same folder in NoSymlinks mode refuses the link on the way.
	nr := open(t, h.pod, confined.NoSymlinks)
	if _, err := nr.ReadFile("/var/run/vkt/ready", 1024); !errors.Is(err, syscall.ELOOP) {
		t.Fatalf("NoSymlinks through /var/run: %v, want ELOOP", err)
	}
}

// What the handler does in a launcher folder works: sockets dialled and
// listened on, files read, staged, renamed, linked and removed.
func TestOperations(t *testing.T) {
	dir := t.TempDir()
	r := open(t, dir, confined.NoSymlinks)
	ctx := context.Background()

	for _, d := range []string{"a", "a/b", "a/b/c"} {
		if err := r.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(filepath.Join(dir, d)); err != nil || !fi.IsDir() {
			t.Errorf("Mkdir(%s): %v, %v", d, fi, err)
		}
	}
	if err := r.Mkdir("a/b", 0o755); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Mkdir of an existing folder: %v, want ErrExist", err)
	}

	ln, err := r.ListenUnix("a/mig.sock")
	if err != nil {
		t.Fatal(err)
	}
	// A folder and a socket given to a group, as the handler gives QEMU's.
	for name, mode := range map[string]fs.FileMode{"a/b": fs.ModeSticky | 0o770, "a/mig.sock": 0o660} {
		if err := r.Chown(name, -1, 107); err != nil {
			t.Fatal(err)
		}
		if err := r.Chmod(name, mode); err != nil {
			t.Fatal(err)
		}
		st, err := os.Lstat(filepath.Join(dir, name))
		if err != nil || st.Mode()&(fs.ModePerm|fs.ModeSticky) != mode || st.Sys().(*syscall.Stat_t).Gid != 107 || st.Sys().(*syscall.Stat_t).Uid != uint32(os.Getuid()) {
			t.Errorf("%s after Chown and Chmod: %v, %+v, %v", name, st.Mode(), st.Sys(), err)
		}
	}
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Write([]byte("hi"))
			c.Close()
		}
	}()
	c, err := r.DialUnix(ctx, "a/mig.sock")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2)
	if _, err := c.Read(buf); err != nil || string(buf) != "hi" {
		t.Errorf("read %q, %v", buf, err)
	}
	c.Close()
	p, release, err := r.SocketPath("a/mig.sock")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
		}
	}()
	if c, err := net.Dial("unix", p); err != nil {
		t.Errorf("dial %s: %v", p, err)
	} else {
		c.Close()
	}
	release()
	ln.Close()
	if _, err := os.Lstat(filepath.Join(dir, "a/mig.sock")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the listener's socket is left after Close: %v", err)
	}

	f, name, err := r.CreateTemp("a/b", ".disk.img.vkt-*")
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("data")
	f.Close()
	if err := r.Link(name, "a/b/disk.img"); err != nil {
		t.Fatal(err)
	}
	if err := r.Link(name, "a/b/disk.img"); !errors.Is(err, fs.ErrExist) {
		t.Errorf("a second Link: %v, want ErrExist", err)
	}
	if err := r.Rename(name, "a/b/old"); err != nil {
		t.Fatal(err)
	}
	if b, err := r.ReadFile("a/b/disk.img", 4); err != nil || string(b) != "data" {
		t.Errorf("ReadFile = %q, %v", b, err)
	}
	if fi, err := r.Lstat("a/b/disk.img"); err != nil || !fi.Mode().IsRegular() || fi.Size() != 4 {
		t.Errorf("Lstat = %v, %v", fi, err)
	}
	ents, err := r.ReadDir("a/b")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if d := cmp.Diff([]string{"c", "disk.img", "old"}, names); d != "" {
		t.Errorf("ReadDir (-want +got):\n%s", d)
	}
	if err := r.Remove("a/b/old"); err != nil {
		t.Fatal(err)
	}
	if err := r.Remove("a/b/c"); err != nil {
		t.Errorf("Remove of an empty folder: %v", err)
	}
	if err := r.RemoveAll("a"); err != nil {
		t.Fatal(err)
	}
	if err := r.RemoveAll("a"); err != nil {
		t.Errorf("RemoveAll of a missing name: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("left in the folder: %v", ents)
	}
}

// RemoveAll of a tree holding links removes the links, never what they
// point at.
func TestRemoveAllKeepsLinkTargets(t *testing.T) {
	h := newHost(t)
	if err := os.MkdirAll(filepath.Join(h.pod, "folder", "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	symlink(t, filepath.Join(h.dir, "etc"), filepath.Join(h.pod, "folder", "deep", "etc"))
	symlink(t, h.secret, filepath.Join(h.pod, "folder", "shadow"))
	r := open(t, h.pod, confined.NoSymlinks)
	if err := r.RemoveAll("folder"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(h.pod, "folder")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("folder left: %v", err)
	}
	h.untouched(t)
}

// OpenReadable opens files and folders, and nothing through a link in
// NoSymlinks mode.
func TestOpenReadable(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "d", "f"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	symlink(t, "d/f", filepath.Join(dir, "l"))
	r := open(t, dir, confined.NoSymlinks)
	f, err := r.OpenReadable("d/f")
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(f)
	f.Close()
	if err != nil || string(b) != "data" {
		t.Errorf("OpenReadable(d/f) read %q, %v; want data", b, err)
	}
	d, err := r.OpenReadable("d")
	if err != nil {
		t.Fatal(err)
	}
	ents, err := d.ReadDir(-1)
	d.Close()
	if err != nil || len(ents) != 1 || ents[0].Name() != "f" {
		t.Errorf("OpenReadable(d) lists %v, %v; want [f]", ents, err)
	}
	if f, err := r.OpenReadable("l"); err == nil {
		f.Close()
		t.Error("OpenReadable followed a link in NoSymlinks mode")
	}
}
