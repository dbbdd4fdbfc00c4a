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

// openSubPath opens, as an O_PATH descriptor, what the subPath sub of the
// volume at root names, as a kubelet resolves a subPath: links are
// followed while they stay inside the volume, a path that ends outside it
// (or is absolute, or climbs out with "..") is refused. The path found is
// then opened below root with no link allowed at any step (openat2's
// RESOLVE_NO_SYMLINKS and RESOLVE_BENEATH), so a pod that swaps a folder
// for a link between the two steps gets an error, not a mount of the
// node's files: the caller mounts the descriptor (/proc/self/fd/N), never
// the path again.
func openSubPath(root, sub string) (int, error) {
	clean := filepath.Clean(sub)
	if filepath.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
		return -1, fmt.Errorf("subPath %q: must be a relative path inside the volume", sub)
	}
	base, err := filepath.EvalSymlinks(root)
	if err != nil {
		return -1, fmt.Errorf("volume root %s: %w", root, err)
	}
	real, err := filepath.EvalSymlinks(filepath.Join(base, clean))
	if err != nil {
		return -1, fmt.Errorf("subPath %q: %w", sub, err)
	}
	rel, err := filepath.Rel(base, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return -1, fmt.Errorf("subPath %q: leads outside the volume, to %s", sub, real)
	}
	fd, err := openBeneath(base, rel)
	if err != nil {
		return -1, fmt.Errorf("subPath %q: %w", sub, err)
	}
	return fd, nil
}

// openBeneath opens rel below the folder base as an O_PATH descriptor,
// refusing a link at any step and any path out of base.
func openBeneath(base, rel string) (int, error) {
	rootFD, err := unix.Open(base, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("volume root %s: %w", base, err)
	}
	defer unix.Close(rootFD)
	fd, err := unix.Openat2(rootFD, rel, &unix.OpenHow{Flags: unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS})
	if err != nil {
		return -1, fmt.Errorf("opening %s below %s without following links: %w", rel, base, err)
	}
	return fd, nil
}
