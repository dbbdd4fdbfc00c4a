package fake

import (
	"context"
	"io/fs"
	"slices"

	"github.com/virtkit/virtkit/virt/storage"
)

// FS is a storage.Inspector over maps: planner tests describe the pod's
// files with it instead of making them.
type FS struct {
	// Images are the image files and devices, by path.
	Images map[string]storage.ImageInfo
	// Dirs are the folders, by path, with the files below them
	// (slash-separated, relative); a folder with no files maps to nil.
	Dirs map[string][]string
	// Errs makes reading a path fail with the given error.
	Errs map[string]error
}

var _ storage.Inspector = FS{}

// Inspect returns Images[path], or an error wrapping fs.ErrNotExist.
func (f FS) Inspect(_ context.Context, path string) (storage.ImageInfo, error) {
	if err, ok := f.Errs[path]; ok {
		return storage.ImageInfo{}, err
	}
	if i, ok := f.Images[path]; ok {
		return i, nil
	}
	return storage.ImageInfo{}, &fs.PathError{Op: "open", Path: path, Err: fs.ErrNotExist}
}

// Exists reports whether path is an image or a folder.
func (f FS) Exists(_ context.Context, path string) (bool, error) {
	if err, ok := f.Errs[path]; ok {
		return false, err
	}
	_, img := f.Images[path]
	_, dir := f.Dirs[path]
	return img || dir, nil
}

// Files returns Dirs[dir], sorted.
func (f FS) Files(_ context.Context, dir string) ([]string, error) {
	if err, ok := f.Errs[dir]; ok {
		return nil, err
	}
	files, ok := f.Dirs[dir]
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: fs.ErrNotExist}
	}
	out := slices.Clone(files)
	slices.Sort(out)
	return out, nil
}
