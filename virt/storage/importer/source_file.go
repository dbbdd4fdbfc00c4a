package importer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// maxFolderEntries bounds the folder a FileSource looks into.
const maxFolderEntries = 64

// FileSource reads an image from a file of a mounted volume: the disk.img
// of a claim being cloned, or the disk of a containerDisk image mounted as
// an image volume. Path names the file, or a folder holding exactly one
// regular, non-hidden file (a containerDisk's /disk).
//
// The volume is someone else's: the file is opened without following a
// symbolic link, and must be a regular file.
type FileSource struct {
	Path string
	// Name names the source in messages (a claim, an image reference);
	// default Path.
	Name string
}

// String implements Source.
func (s FileSource) String() string {
	if s.Name != "" {
		return s.Name
	}
	return s.Path
}

// Open implements Source.
func (s FileSource) Open(ctx context.Context) (io.ReadCloser, int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, -1, err
	}
	path, err := s.file()
	if err != nil {
		return nil, -1, fail(ReasonRefused, s.String(), err)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|oNoFollow, 0)
	if err != nil {
		return nil, -1, fail(ReasonRefused, s.String(), err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, -1, fail(ReasonRefused, s.String(), err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, -1, fail(ReasonRefused, s.String(), fmt.Errorf("%s is not a regular file (%s)", path, fi.Mode().Type()))
	}
	return f, fi.Size(), nil
}

// file resolves Path to the one file to read.
func (s FileSource) file() (string, error) {
	fi, err := os.Lstat(s.Path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("no disk image at %s", s.Path)
	case err != nil:
		return "", err
	case fi.Mode()&os.ModeSymlink != 0:
		return "", fmt.Errorf("%s is a symbolic link: refused, not followed", s.Path)
	case !fi.IsDir():
		return s.Path, nil
	}
	d, err := os.Open(s.Path)
	if err != nil {
		return "", err
	}
	defer d.Close()
	entries, err := d.ReadDir(maxFolderEntries + 1)
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	if len(entries) > maxFolderEntries {
		return "", fmt.Errorf("%s holds more than %d entries", s.Path, maxFolderEntries)
	}
	var found []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") && e.Type().IsRegular() {
			found = append(found, e.Name())
		}
	}
	if len(found) != 1 {
		return "", fmt.Errorf("%s holds %d disk files (%s), want exactly one", s.Path, len(found), strings.Join(found, ", "))
	}
	return filepath.Join(s.Path, found[0]), nil
}
