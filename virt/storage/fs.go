package storage

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// FS is the file system a Manager (and FSInspector) reads and writes
// images in, by the paths of the plan: the pod's paths. The default,
// HostFS, takes them as the node's own. The handler gives the pod's root
// opened with virt/confined in InRoot mode, whose *confined.Root is an FS:
// every path is then resolved as the pod sees it, following the pod's
// links inside the pod and never out of it.
type FS interface {
	OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error)
	Stat(name string) (fs.FileInfo, error)
	Lstat(name string) (fs.FileInfo, error)
	// ReadFile reads a regular file of at most limit bytes.
	ReadFile(name string, limit int64) ([]byte, error)
	// ReadDir lists a folder, sorted by name.
	ReadDir(name string) ([]fs.DirEntry, error)
	Mkdir(name string, perm fs.FileMode) error
	Remove(name string) error
	Rename(oldname, newname string) error
	// Link makes newname a hard link to oldname; it fails when newname
	// exists.
	Link(oldname, newname string) error
	// CreateTemp creates a new file, mode 0600, in the folder dir, named by
	// pattern ("*" replaced by a random string), and returns its name.
	CreateTemp(dir, pattern string) (*os.File, string, error)
	// Chown gives name to uid and gid; a final link is refused, not
	// followed.
	Chown(name string, uid, gid int) error
}

// HostFS is the node's own file system, paths taken as they are.
type HostFS struct{}

var _ FS = HostFS{}

// OpenFile is os.OpenFile.
func (HostFS) OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(name, flag, perm)
}

// Stat is os.Stat.
func (HostFS) Stat(name string) (fs.FileInfo, error) { return os.Stat(name) }

// Lstat is os.Lstat.
func (HostFS) Lstat(name string) (fs.FileInfo, error) { return os.Lstat(name) }

// ReadFile reads the regular file name, at most limit bytes.
func (HostFS) ReadFile(name string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|nonBlock, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fmt.Errorf("not a regular file (%s)", fi.Mode().Type())}
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fmt.Errorf("larger than %d bytes", limit)}
	}
	return b, nil
}

// ReadDir is os.ReadDir.
func (HostFS) ReadDir(name string) ([]fs.DirEntry, error) { return os.ReadDir(name) }

// Mkdir is os.Mkdir.
func (HostFS) Mkdir(name string, perm fs.FileMode) error { return os.Mkdir(name, perm) }

// Remove is os.Remove.
func (HostFS) Remove(name string) error { return os.Remove(name) }

// Rename is os.Rename.
func (HostFS) Rename(oldname, newname string) error { return os.Rename(oldname, newname) }

// Link is os.Link.
func (HostFS) Link(oldname, newname string) error { return os.Link(oldname, newname) }

// Chown is os.Lchown, refusing a link.
func (HostFS) Chown(name string, uid, gid int) error {
	fi, err := os.Lstat(name)
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return &fs.PathError{Op: "chown", Path: name, Err: errors.New("a link, not followed")}
	}
	return os.Lchown(name, uid, gid)
}

// CreateTemp is os.CreateTemp.
func (HostFS) CreateTemp(dir, pattern string) (*os.File, string, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, "", err
	}
	return f, f.Name(), nil
}
