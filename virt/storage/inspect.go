package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Inspector is how the planner looks at the pod's files: it only reads.
// OSInspector reads the real file system; tests give the planner a map.
type Inspector interface {
	// Inspect reads the image (file or block device) at path. An absent
	// path is an error wrapping fs.ErrNotExist.
	Inspect(ctx context.Context, path string) (ImageInfo, error)
	// Exists reports whether path exists (a file, folder or device).
	Exists(ctx context.Context, path string) (bool, error)
	// Files lists the regular files below dir, following symbolic links,
	// as slash-separated paths relative to dir, sorted. Entries whose name
	// starts with ".." (the kubelet's atomic-writer bookkeeping) are left
	// out. An absent dir wraps fs.ErrNotExist.
	Files(ctx context.Context, dir string) ([]string, error)
}

// OSInspector reads the node's own file system (FSInspector on HostFS).
type OSInspector struct{}

var _ Inspector = OSInspector{}

// Inspect implements Inspector.
func (OSInspector) Inspect(ctx context.Context, path string) (ImageInfo, error) {
	return FSInspector{}.Inspect(ctx, path)
}

// Exists implements Inspector.
func (OSInspector) Exists(ctx context.Context, path string) (bool, error) {
	return FSInspector{}.Exists(ctx, path)
}

// Files implements Inspector.
func (OSInspector) Files(ctx context.Context, dir string) ([]string, error) {
	return FSInspector{}.Files(ctx, dir)
}

// FSInspector reads the images and folders of an FS (HostFS when nil),
// such as a pod's root opened with virt/confined.
type FSInspector struct{ FS FS }

var _ Inspector = FSInspector{}

func (i FSInspector) fs() FS {
	if i.FS == nil {
		return HostFS{}
	}
	return i.FS
}

// Inspect opens path read-only (a FIFO is not waited on) and detects its
// format from its header: a regular file or a block device only.
func (i FSInspector) Inspect(_ context.Context, path string) (ImageInfo, error) {
	f, err := i.fs().OpenFile(path, os.O_RDONLY|nonBlock, 0)
	if err != nil {
		return ImageInfo{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ImageInfo{}, err
	}
	size := st.Size()
	block := st.Mode()&fs.ModeDevice != 0 && st.Mode()&fs.ModeCharDevice == 0
	switch {
	case block:
		if size, err = f.Seek(0, io.SeekEnd); err != nil {
			return ImageInfo{}, fmt.Errorf("size of block device %s: %w", path, err)
		}
	case !st.Mode().IsRegular():
		return ImageInfo{}, fmt.Errorf("%s is neither a file nor a block device (%s)", path, st.Mode().Type())
	}
	info, err := DetectFormat(f, size)
	if err != nil {
		return ImageInfo{}, fmt.Errorf("%s: %w", path, err)
	}
	info.Block = block
	return info, nil
}

// Exists stats path.
func (i FSInspector) Exists(_ context.Context, path string) (bool, error) {
	_, err := i.fs().Stat(path)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, err
}

// Files walks dir, following symbolic links (a projected configMap's keys
// are links into its ..data folder).
func (i FSInspector) Files(_ context.Context, dir string) ([]string, error) {
	fsys := i.fs()
	var out []string
	var walk func(rel string, depth int) error
	walk = func(rel string, depth int) error {
		if depth > 16 {
			return fmt.Errorf("%s: folders nested too deep", filepath.Join(dir, rel))
		}
		entries, err := fsys.ReadDir(filepath.Join(dir, rel))
		if err != nil {
			return err
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "..") {
				continue
			}
			p := filepath.Join(rel, e.Name())
			st, err := fsys.Stat(filepath.Join(dir, p))
			if err != nil {
				return err
			}
			switch {
			case st.IsDir():
				if err := walk(p, depth+1); err != nil {
					return err
				}
			case st.Mode().IsRegular():
				out = append(out, filepath.ToSlash(p))
			}
		}
		return nil
	}
	if err := walk("", 0); err != nil {
		return nil, err
	}
	sort.Strings(out)
	return out, nil
}
