package hollow

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/virtkit/virtkit/local/node"
)

// hostPath is the node's path of podPath, a path in the pod's view, through
// the longest mount whose target holds it.
func hostPath(mounts []node.Mount, podPath string) (string, error) {
	podPath = path.Clean(podPath)
	best := -1
	for i, m := range mounts {
		t := path.Clean(m.Target)
		if (podPath == t || strings.HasPrefix(podPath, strings.TrimSuffix(t, "/")+"/")) &&
			(best < 0 || len(t) > len(path.Clean(mounts[best].Target))) {
			best = i
		}
	}
	if best < 0 {
		return "", fmt.Errorf("%s: %w", podPath, errNoMount)
	}
	rel := strings.TrimPrefix(strings.TrimPrefix(podPath, path.Clean(mounts[best].Target)), "/")
	return filepath.Join(mounts[best].Path(), filepath.FromSlash(rel)), nil
}

// mirrorLimit bounds the folders and files mirror makes for one pod: a
// hollow pod's volumes are its folders and one disk file per image.
const mirrorLimit = 1024

// mirror lays out under root the folders and files of the pod's mounts at
// their targets, every file empty: the pod's file system as the handler
// reads it (which disk file a containerDisk holds, which files a volume
// has), without the contents nobody reads on a hollow node. Symbolic links
// and special files are skipped, never followed.
func mirror(root string, mounts []node.Mount) error {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return fmt.Errorf("hollow: %w", err)
	}
	made := 0
	for _, m := range mounts {
		dst := filepath.Join(root, filepath.FromSlash(path.Clean("/"+m.Target)))
		src := m.Path()
		err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if made++; made > mirrorLimit {
				return fmt.Errorf("more than %d files and folders", mirrorLimit)
			}
			rel, err := filepath.Rel(src, p)
			if err != nil {
				return err
			}
			to := filepath.Join(dst, rel)
			switch {
			case d.IsDir():
				return os.MkdirAll(to, 0o755)
			case d.Type().IsRegular():
				if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
					return err
				}
				f, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|syscall.O_NOFOLLOW, 0o644)
				if err != nil {
					return err
				}
				return f.Close()
			}
			return nil
		})
		if errors.Is(err, fs.ErrNotExist) {
			continue // a mount whose source is not there yet: nothing to read
		}
		if err != nil {
			return fmt.Errorf("hollow: the pod's view of %s: %w", m.Target, err)
		}
	}
	return nil
}
