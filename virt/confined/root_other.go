//go:build !linux

package confined

import (
	"context"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path"
	"strings"
)

// Root is an open folder below which every name is resolved confined.
// Outside Linux it is an os.Root: links are followed within the folder
// only, absolute links are refused, and sockets are not supported.
type Root struct {
	root *os.Root
	name string
	mode Mode
}

// Open opens the folder dir as a Root.
func Open(dir string, mode Mode) (*Root, error) {
	if mode != NoSymlinks && mode != InRoot {
		return nil, fmt.Errorf("confined: open %s: unknown mode %s", dir, mode)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &Root{root: root, name: dir, mode: mode}, nil
}

// Name is the folder's path as given to Open.
func (r *Root) Name() string { return r.name }

// Mode is how the Root treats symbolic links.
func (r *Root) Mode() Mode { return r.mode }

// Close releases the folder's handle.
func (r *Root) Close() error { return r.root.Close() }

func rel(name string) string {
	if n := strings.TrimLeft(path.Clean("/"+name), "/"); n != "" {
		return n
	}
	return "."
}

// OpenFile opens name as os.OpenFile does.
func (r *Root) OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	return r.root.OpenFile(rel(name), flag, perm)
}

// Open opens name read-only.
func (r *Root) Open(name string) (*os.File, error) { return r.root.Open(rel(name)) }

// Stat describes name.
func (r *Root) Stat(name string) (fs.FileInfo, error) { return r.root.Stat(rel(name)) }

// Lstat describes name itself, a final link not followed.
func (r *Root) Lstat(name string) (fs.FileInfo, error) { return r.root.Lstat(rel(name)) }

// Chown gives name to uid and gid; -1 keeps either. A final link is not
// followed.
func (r *Root) Chown(name string, uid, gid int) error { return r.root.Lchown(rel(name), uid, gid) }

// Chmod sets the permission bits of name.
func (r *Root) Chmod(name string, mode fs.FileMode) error { return r.root.Chmod(rel(name), mode) }

// ReadFile reads the regular file name, at most limit bytes.
func (r *Root) ReadFile(name string, limit int64) ([]byte, error) {
	fi, err := r.Stat(name)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, pathError("read", r.name, name, fmt.Errorf("%w (%s)", ErrNotRegular, fi.Mode().Type()))
	}
	f, err := r.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return r.readLimited(f, name, limit)
}

// OpenReadable opens name for reading if it is a regular file or a
// folder; anything else is ErrNotRegular. The check comes before the open
// here: only Linux holds the inode between the two.
func (r *Root) OpenReadable(name string) (*os.File, error) {
	fi, err := r.Stat(name)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() && !fi.IsDir() {
		return nil, pathError("open", r.name, name, fmt.Errorf("%w (%s)", ErrNotRegular, fi.Mode().Type()))
	}
	return r.Open(name)
}

// ReadDir lists the folder name, sorted by name.
func (r *Root) ReadDir(name string) ([]fs.DirEntry, error) {
	f, err := r.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ents, err := f.ReadDir(-1)
	sortEntries(ents)
	return ents, err
}

// Mkdir makes the folder name.
func (r *Root) Mkdir(name string, perm fs.FileMode) error { return r.root.Mkdir(rel(name), perm) }

// Remove removes the file, link or empty folder name.
func (r *Root) Remove(name string) error { return r.root.Remove(rel(name)) }

// RemoveAll removes name and everything below it.
func (r *Root) RemoveAll(name string) error { return r.root.RemoveAll(rel(name)) }

// Rename moves oldname to newname.
func (r *Root) Rename(oldname, newname string) error {
	return r.root.Rename(rel(oldname), rel(newname))
}

// Link makes newname a hard link to oldname.
func (r *Root) Link(oldname, newname string) error { return r.root.Link(rel(oldname), rel(newname)) }

// Symlink makes newname a symbolic link holding target.
func (r *Root) Symlink(target, newname string) error { return r.root.Symlink(target, rel(newname)) }

// DialUnix is not supported outside Linux.
func (r *Root) DialUnix(context.Context, string) (net.Conn, error) {
	return nil, ErrUnsupported
}

// SocketPath is not supported outside Linux.
func (r *Root) SocketPath(string) (string, func() error, error) {
	return "", nil, ErrUnsupported
}

// ListenUnix is not supported outside Linux.
func (r *Root) ListenUnix(string) (net.Listener, error) { return nil, ErrUnsupported }
