package storage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// WithRoot makes every file the Manager reads or writes lie below root: the
// pod's file system as seen from the node, such as /proc/PID/root of a
// process in the launcher pod, or /proc/self/fd/N of a directory handle on
// it. Only the effects move: the plan, and so the domain document, keeps the
// paths as QEMU sees them inside the pod, and the overlays Prepare writes
// name their base image by its pod path.
//
// Paths are resolved inside root ([InRoot]): a symbolic link in the pod's
// files, such as /var/run -> /run, is followed as the pod sees it and can
// never lead out of root.
func WithRoot(root string) Option { return func(o *options) { o.root = root } }

// RootInspector returns an Inspector that looks at path below root whenever
// asked about path, and reports errors with the pod's path. root "" returns
// i unchanged. Use it for virt/storage/hotplug when the Manager runs WithRoot.
func RootInspector(root string, i Inspector) Inspector {
	if root == "" {
		return i
	}
	return rootInspector{root: root, in: i}
}

type rootInspector struct {
	root string
	in   Inspector
}

func (r rootInspector) Inspect(ctx context.Context, path string) (ImageInfo, error) {
	return r.in.Inspect(ctx, inRoot(r.root, path))
}

func (r rootInspector) Exists(ctx context.Context, path string) (bool, error) {
	return r.in.Exists(ctx, inRoot(r.root, path))
}

func (r rootInspector) Files(ctx context.Context, dir string) ([]string, error) {
	return r.in.Files(ctx, inRoot(r.root, dir))
}

// inRoot is path below root ([InRoot]); root "" leaves path alone. A path
// that cannot be resolved (a loop of links) is joined as it is, and the
// operation on it fails with the file system's error.
func inRoot(root, path string) string {
	if root == "" {
		return path
	}
	p, err := InRoot(root, path)
	if err != nil {
		return filepath.Join(root, path)
	}
	return p
}

// maxLinks bounds the symbolic links one resolution follows, as Linux does.
const maxLinks = 40

// InRoot returns the node path of path as a process whose root is root
// sees it: each symbolic link on the way is followed inside root (an
// absolute target starts again at root, ".." stops at root), so the result
// always lies below root. Components that do not exist are appended as
// they are, so the result also names files still to be created.
func InRoot(root, path string) (string, error) {
	var resolved string // below root, no links, clean, "" is root itself
	rest := strings.Split(filepath.Clean("/"+path), "/")
	links := 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			resolved = filepath.Dir("/" + resolved)[1:]
			continue
		}
		next := filepath.Join(resolved, c)
		fi, err := os.Lstat(filepath.Join(root, next))
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			resolved = next
			if err != nil { // missing: nothing below it can be a link
				resolved = strings.TrimPrefix(filepath.Join(append([]string{"/", resolved}, rest...)...), "/")
				rest = nil
			}
			continue
		}
		if links++; links > maxLinks {
			return "", fmt.Errorf("storage: %s below %s: too many levels of symbolic links", path, root)
		}
		target, err := os.Readlink(filepath.Join(root, next))
		if err != nil {
			return "", fmt.Errorf("storage: %s below %s: %w", path, root, err)
		}
		if filepath.IsAbs(target) {
			resolved = ""
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	return filepath.Join(root, resolved), nil
}
