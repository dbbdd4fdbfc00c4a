//go:build linux

package confined

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Root is an open folder below which every name is resolved confined.
// It is safe for concurrent use; Close it when done.
type Root struct {
	dir  *os.File // O_PATH handle on the folder
	name string
	mode Mode
}

// Open opens the folder dir as a Root. dir itself is trusted: it is opened
// as a plain path (it may be /proc/PID/root, or a folder only the caller
// can replace); only the names below it are confined.
func Open(dir string, mode Mode) (*Root, error) {
	if mode != NoSymlinks && mode != InRoot {
		return nil, fmt.Errorf("confined: open %s: unknown mode %s", dir, mode)
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	return &Root{dir: os.NewFile(uintptr(fd), dir), name: dir, mode: mode}, nil
}

// Name is the folder's path as given to Open.
func (r *Root) Name() string { return r.name }

// Mode is how the Root treats symbolic links.
func (r *Root) Mode() Mode { return r.mode }

// Close releases the folder's handle.
func (r *Root) Close() error { return r.dir.Close() }

func (r *Root) resolve() uint64 {
	res := uint64(unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS)
	if r.mode == NoSymlinks {
		res |= unix.RESOLVE_NO_SYMLINKS
	}
	return res
}

// openat2 opens name below the root with flags (O_CLOEXEC added), retrying
// when the kernel asks to (EAGAIN: a rename raced the resolution).
func (r *Root) openat2(op, name string, flags int, perm uint32) (int, error) {
	how := &unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Resolve: r.resolve()}
	if flags&(unix.O_CREAT|unix.O_TMPFILE) != 0 {
		how.Mode = uint64(perm)
	}
	for range 16 {
		fd, err := unix.Openat2(int(r.dir.Fd()), name, how)
		if err == nil {
			return fd, nil
		}
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		if err == unix.ENOSYS {
			err = fmt.Errorf("openat2 (Linux 5.6 or later) is required: %w", ErrUnsupported)
		}
		return -1, pathError(op, r.name, name, err)
	}
	return -1, pathError(op, r.name, name, unix.EAGAIN)
}

// OpenFile opens name as os.OpenFile does (O_CLOEXEC added). In InRoot
// mode a final link is followed inside the root unless flag has
// O_NOFOLLOW.
func (r *Root) OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	fd, err := r.openat2("open", name, flag, uint32(perm.Perm()))
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), path.Join(r.name, name)), nil
}

// Open opens name read-only.
func (r *Root) Open(name string) (*os.File, error) { return r.OpenFile(name, os.O_RDONLY, 0) }

// opath opens name as an O_PATH handle, the final component not followed
// when nofollow: it names the inode without opening it.
func (r *Root) opath(op, name string, nofollow bool) (*os.File, error) {
	flags := unix.O_PATH
	if nofollow {
		flags |= unix.O_NOFOLLOW
	}
	fd, err := r.openat2(op, name, flags, 0)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), path.Join(r.name, name)), nil
}

func (r *Root) stat(op, name string, nofollow bool) (fs.FileInfo, error) {
	f, err := r.opath(op, name, nofollow)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, pathError(op, r.name, name, err)
	}
	return fi, nil
}

// Stat describes name, a final link followed in InRoot mode.
func (r *Root) Stat(name string) (fs.FileInfo, error) { return r.stat("stat", name, false) }

// Lstat describes name itself, a final link not followed.
func (r *Root) Lstat(name string) (fs.FileInfo, error) { return r.stat("lstat", name, true) }

// Chown gives name, a final link not followed (a link is refused), to uid
// and gid; -1 keeps either.
func (r *Root) Chown(name string, uid, gid int) error {
	p, err := r.notLink("chown", name)
	if err != nil {
		return err
	}
	defer p.Close()
	if err := unix.Fchownat(int(p.Fd()), "", uid, gid, unix.AT_EMPTY_PATH); err != nil {
		return pathError("chown", r.name, name, err)
	}
	return nil
}

// Chmod sets the permission bits of name, a final link not followed (a
// link is refused).
func (r *Root) Chmod(name string, mode fs.FileMode) error {
	p, err := r.notLink("chmod", name)
	if err != nil {
		return err
	}
	defer p.Close()
	// The handle names the inode; its /proc link reaches that very inode.
	if err := os.Chmod("/proc/self/fd/"+strconv.Itoa(int(p.Fd())), mode); err != nil {
		return pathError("chmod", r.name, name, err)
	}
	return nil
}

// notLink opens name as an O_PATH handle, refusing a symbolic link.
func (r *Root) notLink(op, name string) (*os.File, error) {
	p, err := r.opath(op, name, true)
	if err != nil {
		return nil, err
	}
	fi, err := p.Stat()
	if err == nil && fi.Mode().Type() == fs.ModeSymlink {
		err = errors.New("a symbolic link")
	}
	if err != nil {
		p.Close()
		return nil, pathError(op, r.name, name, err)
	}
	return p, nil
}

// reopen opens, for reading, the inode an O_PATH handle names, through
// /proc/self/fd: the same inode, whatever the name now points at.
func reopen(p *os.File, flags int) (*os.File, error) {
	fd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(int(p.Fd())), flags|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "reopen", Path: p.Name(), Err: err}
	}
	return os.NewFile(uintptr(fd), p.Name()), nil
}

// ReadFile reads the regular file name, at most limit bytes: a longer
// file is ErrTooLarge, anything but a regular file (a FIFO, a device, a
// socket) is ErrNotRegular and is never opened for reading.
func (r *Root) ReadFile(name string, limit int64) ([]byte, error) {
	p, err := r.opath("read", name, false)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	fi, err := p.Stat()
	if err != nil {
		return nil, pathError("read", r.name, name, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, pathError("read", r.name, name, fmt.Errorf("%w (%s)", ErrNotRegular, fi.Mode().Type()))
	}
	if fi.Size() > limit {
		return nil, pathError("read", r.name, name, fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, fi.Size(), limit))
	}
	f, err := reopen(p, unix.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return r.readLimited(f, name, limit) // the file may have grown since the stat
}

// OpenReadable opens name for reading if it is a regular file or a
// folder; anything else (a FIFO, a device, a socket) is ErrNotRegular and
// is never opened for reading, so a planted FIFO cannot block the caller.
func (r *Root) OpenReadable(name string) (*os.File, error) {
	p, err := r.opath("open", name, false)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	fi, err := p.Stat()
	if err != nil {
		return nil, pathError("open", r.name, name, err)
	}
	if !fi.Mode().IsRegular() && !fi.IsDir() {
		return nil, pathError("open", r.name, name, fmt.Errorf("%w (%s)", ErrNotRegular, fi.Mode().Type()))
	}
	return reopen(p, unix.O_RDONLY)
}

// ReadDir lists the folder name, sorted by name.
func (r *Root) ReadDir(name string) ([]fs.DirEntry, error) {
	f, err := r.OpenFile(name, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		return nil, pathError("readdir", r.name, name, err)
	}
	sortEntries(ents)
	return ents, nil
}

// parent opens the folder that holds name and returns it with name's last
// component, which must be a plain name.
func (r *Root) parent(op, name string) (*os.File, string, error) {
	dir, base := path.Split(strings.TrimRight(name, "/"))
	if base == "" || base == "." || base == ".." {
		return nil, "", pathError(op, r.name, name, fmt.Errorf("not a name below the root: %w", fs.ErrInvalid))
	}
	if dir == "" {
		dir = "."
	}
	fd, err := r.openat2(op, dir, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, "", err
	}
	return os.NewFile(uintptr(fd), path.Join(r.name, dir)), base, nil
}

// Mkdir makes the folder name.
func (r *Root) Mkdir(name string, perm fs.FileMode) error {
	p, base, err := r.parent("mkdir", name)
	if err != nil {
		return err
	}
	defer p.Close()
	if err := unix.Mkdirat(int(p.Fd()), base, uint32(perm.Perm())); err != nil {
		return pathError("mkdir", r.name, name, err)
	}
	return nil
}

// Remove removes the file, link, socket or empty folder name (a final link
// is removed, not followed).
func (r *Root) Remove(name string) error {
	p, base, err := r.parent("remove", name)
	if err != nil {
		return err
	}
	defer p.Close()
	err = unix.Unlinkat(int(p.Fd()), base, 0)
	if err == unix.EISDIR {
		err = unix.Unlinkat(int(p.Fd()), base, unix.AT_REMOVEDIR)
	}
	if err != nil {
		return pathError("remove", r.name, name, err)
	}
	return nil
}

// RemoveAll removes name and, when it is a folder, everything below it. A
// link is removed, never followed; a name that does not exist is no error.
func (r *Root) RemoveAll(name string) error {
	p, base, err := r.parent("removeall", name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer p.Close()
	if err := removeAllAt(int(p.Fd()), base, 0); err != nil {
		return pathError("removeall", r.name, name, err)
	}
	return nil
}

// maxDepth bounds RemoveAll's descent.
const maxDepth = 64

func removeAllAt(dirfd int, base string, depth int) error {
	err := unix.Unlinkat(dirfd, base, 0)
	if err == nil || err == unix.ENOENT {
		return nil
	}
	if err != unix.EISDIR && err != unix.EPERM {
		return err
	}
	if depth >= maxDepth {
		return fmt.Errorf("folders nested deeper than %d", maxDepth)
	}
	// A folder: opened without following a link, nor crossing out of it.
	how := &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	fd, err := unix.Openat2(dirfd, base, how)
	if err != nil {
		return err
	}
	d := os.NewFile(uintptr(fd), base)
	names, err := d.Readdirnames(-1)
	if err == nil {
		for _, n := range names {
			if err = removeAllAt(fd, n, depth+1); err != nil {
				break
			}
		}
	}
	d.Close()
	if err != nil {
		return err
	}
	if err := unix.Unlinkat(dirfd, base, unix.AT_REMOVEDIR); err != nil && err != unix.ENOENT {
		return err
	}
	return nil
}

// Rename moves oldname to newname, both below the root, replacing a file
// at newname as rename(2) does.
func (r *Root) Rename(oldname, newname string) error {
	return r.between("rename", oldname, newname, func(ofd int, ob string, nfd int, nb string) error {
		return unix.Renameat(ofd, ob, nfd, nb)
	})
}

// Link makes newname a hard link to oldname (a final link at oldname is
// linked itself, not followed); it fails when newname exists.
func (r *Root) Link(oldname, newname string) error {
	return r.between("link", oldname, newname, func(ofd int, ob string, nfd int, nb string) error {
		return unix.Linkat(ofd, ob, nfd, nb, 0)
	})
}

// between runs an *at system call on oldname and newname, each given as
// its confined parent folder and last component.
func (r *Root) between(op, oldname, newname string, call func(ofd int, ob string, nfd int, nb string) error) error {
	oldp, ob, err := r.parent(op, oldname)
	if err != nil {
		return err
	}
	defer oldp.Close()
	newp, nb, err := r.parent(op, newname)
	if err != nil {
		return err
	}
	defer newp.Close()
	if err := call(int(oldp.Fd()), ob, int(newp.Fd()), nb); err != nil {
		return &os.LinkError{Op: op, Old: path.Join(r.name, oldname), New: path.Join(r.name, newname), Err: err}
	}
	return nil
}

// Symlink makes newname a symbolic link holding target (never resolved
// here).
func (r *Root) Symlink(target, newname string) error {
	p, base, err := r.parent("symlink", newname)
	if err != nil {
		return err
	}
	defer p.Close()
	if err := unix.Symlinkat(target, int(p.Fd()), base); err != nil {
		return pathError("symlink", r.name, newname, err)
	}
	return nil
}

// socket opens name as an O_PATH handle on a unix socket, a final link
// never followed.
func (r *Root) socket(op, name string) (*os.File, error) {
	p, err := r.opath(op, name, true)
	if err != nil {
		return nil, err
	}
	fi, err := p.Stat()
	if err != nil {
		p.Close()
		return nil, pathError(op, r.name, name, err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		p.Close()
		return nil, pathError(op, r.name, name, fmt.Errorf("%w (%s)", ErrNotSocket, fi.Mode().Type()))
	}
	return p, nil
}

// DialUnix connects to the unix stream socket name: only a socket, found
// without following a final link.
func (r *Root) DialUnix(ctx context.Context, name string) (net.Conn, error) {
	p, err := r.socket("dial", name)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", "/proc/self/fd/"+strconv.Itoa(int(p.Fd())))
	if err != nil {
		return nil, pathError("dial", r.name, name, err)
	}
	return c, nil
}

// SocketPath checks that name is a unix socket and returns a path that
// reaches that very socket (/proc/self/fd/N) for a client that dials by
// path itself, such as libvirt's. The path holds until release is called.
func (r *Root) SocketPath(name string) (p string, release func() error, err error) {
	f, err := r.socket("dial", name)
	if err != nil {
		return "", nil, err
	}
	return "/proc/self/fd/" + strconv.Itoa(int(f.Fd())), f.Close, nil
}

// ListenUnix listens on a new unix stream socket at name; a file already
// there is an error. Closing the listener removes the socket, through the
// Root: keep the Root open until then.
func (r *Root) ListenUnix(name string) (net.Listener, error) {
	p, base, err := r.parent("listen", name)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	// bind(2) creates base in the folder the handle names, resolved by
	// the kernel through the handle, not through a path a pod could swap.
	ln, err := net.Listen("unix", "/proc/self/fd/"+strconv.Itoa(int(p.Fd()))+"/"+base)
	if err != nil {
		return nil, pathError("listen", r.name, name, err)
	}
	ul := ln.(*net.UnixListener)
	ul.SetUnlinkOnClose(false) // the /proc path dies with the handle
	dir, _ := path.Split(name)
	return &listener{UnixListener: ul, r: r, name: path.Join(dir, base)}, nil
}

type listener struct {
	*net.UnixListener
	r    *Root
	name string
}

func (l *listener) Close() error {
	err := l.UnixListener.Close()
	if rerr := l.r.Remove(l.name); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) && err == nil {
		err = rerr
	}
	return err
}
