package node

import (
	"fmt"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// makeSubPath makes the folder sub (relative, clean, inside the volume)
// below a writable volume's root as a kubelet does: each missing folder
// with the root's mode and owner, so that a subPath of a volume the pod's
// user may write is writable too. No component may be a symbolic link: a
// pod controls what its volume holds, and a link would send the node (or
// the mount) outside it.
func makeSubPath(root, sub string) error {
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("volume root %s: %w", root, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return fmt.Errorf("volume root %s: %w", root, err)
	}
	perm := st.Mode & 0o7777
	for _, name := range strings.Split(filepath.Clean(sub), "/") {
		if name == "" || name == "." || name == ".." {
			unix.Close(fd)
			return fmt.Errorf("subPath %q: must be a relative path inside the volume", sub)
		}
		made := false
		switch err := unix.Mkdirat(fd, name, perm&0o777); {
		case err == nil:
			made = true
		case err != unix.EEXIST:
			unix.Close(fd)
			return fmt.Errorf("subPath %q: making %s: %w", sub, name, err)
		}
		next, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("subPath %q: %s is not a folder (links are not followed): %w", sub, name, err)
		}
		fd = next
		if made {
			// Mkdirat's mode passes the umask; a kubelet sets it whole.
			if err := unix.Fchown(fd, int(st.Uid), int(st.Gid)); err != nil {
				unix.Close(fd)
				return fmt.Errorf("subPath %q: %w", sub, err)
			}
			if err := unix.Fchmod(fd, perm); err != nil {
				unix.Close(fd)
				return fmt.Errorf("subPath %q: %w", sub, err)
			}
		}
	}
	return unix.Close(fd)
}
