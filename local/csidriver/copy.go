package csidriver

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

const oNoFollow = unix.O_NOFOLLOW

// copyTree copies the folder src into the new folder dst (which must not
// exist): folders, regular files (reflinked where the file system can,
// else copied sparsely), symbolic links as links and FIFOs, with their
// modes, owners and modification times. src was written by a pod: it is
// walked through file descriptors, never following a symbolic link, so a
// folder swapped for a link while the copy runs cannot lead outside it.
// Sockets and device nodes are skipped.
func copyTree(src, dst string) error {
	sfd, err := unix.Open(src, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", src, err)
	}
	defer unix.Close(sfd)
	var st unix.Stat_t
	if err := unix.Fstat(sfd, &st); err != nil {
		return err
	}
	if err := os.Mkdir(dst, 0o700); err != nil {
		return err
	}
	dfd, err := unix.Open(dst, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	if err := copyDirContents(sfd, dfd, src); err != nil {
		return err
	}
	return setMeta(dfd, "", &st)
}

// copyDirContents copies the entries of the open folder sfd into the open
// folder dfd; where names src for errors.
func copyDirContents(sfd, dfd int, where string) error {
	// A duplicate descriptor for reading the entries: os.File closes it.
	rfd, err := unix.Dup(sfd)
	if err != nil {
		return err
	}
	dir := os.NewFile(uintptr(rfd), where)
	defer dir.Close()
	for {
		names, err := dir.Readdirnames(256)
		for _, name := range names {
			if err := copyEntry(sfd, dfd, name, where+"/"+name); err != nil {
				return err
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", where, err)
		}
	}
}

// copyEntry copies the entry name of folder sfd into folder dfd.
func copyEntry(sfd, dfd int, name, where string) error {
	var st unix.Stat_t
	if err := unix.Fstatat(sfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("stat %s: %w", where, err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		cfd, err := unix.Openat(sfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open %s: %w", where, err)
		}
		defer unix.Close(cfd)
		if err := unix.Fstat(cfd, &st); err != nil { // what was opened, not what was looked at
			return err
		}
		if err := unix.Mkdirat(dfd, name, 0o700); err != nil {
			return fmt.Errorf("copy of %s: %w", where, err)
		}
		nfd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(nfd)
		if err := copyDirContents(cfd, nfd, where); err != nil {
			return err
		}
		return setMeta(nfd, "", &st)
	case unix.S_IFREG:
		in, err := unix.Openat(sfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if err != nil {
			return fmt.Errorf("open %s: %w", where, err)
		}
		defer unix.Close(in)
		if err := unix.Fstat(in, &st); err != nil {
			return err
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG {
			return fmt.Errorf("copy %s: no longer a regular file", where)
		}
		out, err := unix.Openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return fmt.Errorf("copy of %s: %w", where, err)
		}
		defer unix.Close(out)
		if err := copyFileData(in, out, st.Size); err != nil {
			return fmt.Errorf("copy %s: %w", where, err)
		}
		return setMeta(out, "", &st)
	case unix.S_IFLNK:
		target, err := readlinkat(sfd, name)
		if err != nil {
			return fmt.Errorf("read link %s: %w", where, err)
		}
		if err := unix.Symlinkat(target, dfd, name); err != nil {
			return fmt.Errorf("copy of %s: %w", where, err)
		}
		return setMeta(dfd, name, &st)
	case unix.S_IFIFO:
		if err := unix.Mkfifoat(dfd, name, 0o600); err != nil {
			return fmt.Errorf("copy of %s: %w", where, err)
		}
		return setMeta(dfd, name, &st)
	}
	return nil // sockets and devices belong to no copy
}

// setMeta gives the open file fd (name "") or the entry name of folder fd
// the owner, mode and times of st. A symbolic link gets its owner and times.
func setMeta(fd int, name string, st *unix.Stat_t) error {
	if name != "" {
		times := []unix.Timespec{st.Atim, st.Mtim}
		if err := unix.Fchownat(fd, name, int(st.Uid), int(st.Gid), unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return err
		}
		if st.Mode&unix.S_IFMT != unix.S_IFLNK {
			if err := unix.Fchmodat(fd, name, st.Mode&0o7777, 0); err != nil {
				return err
			}
		}
		return unix.UtimesNanoAt(fd, name, times, unix.AT_SYMLINK_NOFOLLOW)
	}
	if err := unix.Fchown(fd, int(st.Uid), int(st.Gid)); err != nil {
		return err
	}
	if err := unix.Fchmod(fd, st.Mode&0o7777); err != nil {
		return err
	}
	return unix.Futimes(fd, []unix.Timeval{unix.NsecToTimeval(unix.TimespecToNsec(st.Atim)), unix.NsecToTimeval(unix.TimespecToNsec(st.Mtim))})
}

func readlinkat(fd int, name string) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(fd, name, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// copyFile copies the regular file src to the new file dst, sparsely or as
// a reflink, keeping its mode.
func copyFile(src, dst string) error {
	in, err := unix.Open(src, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", src, err)
	}
	defer unix.Close(in)
	var st unix.Stat_t
	if err := unix.Fstat(in, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("%s: not a regular file", src)
	}
	out, err := unix.Open(dst, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	defer unix.Close(out)
	if err := copyFileData(in, out, st.Size); err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return unix.Fchmod(out, st.Mode&0o7777)
}

// copyFileData makes the empty file out a copy of the size bytes of in: a
// reflink (FICLONE) where the file system shares extents, else a copy of
// the data segments only (SEEK_DATA, SEEK_HOLE), so holes stay holes.
func copyFileData(in, out int, size int64) error {
	if err := unix.IoctlFileClone(out, in); err == nil {
		return nil
	}
	var off int64
	for off < size {
		data, err := unix.Seek(in, off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			break // only a hole is left
		}
		if err != nil {
			return err
		}
		hole, err := unix.Seek(in, data, unix.SEEK_HOLE)
		if err != nil {
			return err
		}
		if err := copyRange(in, out, data, hole-data); err != nil {
			return err
		}
		off = hole
	}
	return unix.Ftruncate(out, size)
}

// copyRange copies n bytes at offset off of in to the same offset of out,
// in the kernel where it can.
func copyRange(in, out int, off, n int64) error {
	for n > 0 {
		roff, woff := off, off
		c, err := unix.CopyFileRange(in, &roff, out, &woff, int(min(n, 1<<30)), 0)
		if err != nil {
			if errors.Is(err, unix.EXDEV) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
				return copyRangeRead(in, out, off, n)
			}
			return err
		}
		if c == 0 {
			return nil // the file shrank meanwhile
		}
		off += int64(c)
		n -= int64(c)
	}
	return nil
}

// copyRangeRead is copyRange through a buffer.
func copyRangeRead(in, out int, off, n int64) error {
	buf := make([]byte, 1<<20)
	for n > 0 {
		c, err := unix.Pread(in, buf[:min(n, int64(len(buf)))], off)
		if err != nil {
			return err
		}
		if c == 0 {
			return nil
		}
		if _, err := unix.Pwrite(out, buf[:c], off); err != nil {
			return err
		}
		off += int64(c)
		n -= int64(c)
	}
	return nil
}
