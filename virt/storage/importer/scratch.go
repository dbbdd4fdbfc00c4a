package importer

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// scratch is a temporary file in a Target's ScratchDir, holding an image
// until it is converted.
type scratch struct {
	f *os.File
	// dir is the folder to remove afterwards, when the import made it.
	dir string
}

// newScratch creates a temporary file in dir (os.TempDir() if empty),
// making dir if it is missing. A link at dir is refused.
func newScratch(dir string) (*scratch, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	s := &scratch{}
	fi, err := os.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.Mkdir(dir, 0o700); err != nil {
			return nil, fmt.Errorf("scratch folder: %w", err)
		}
		s.dir = dir
	case err != nil:
		return nil, fmt.Errorf("scratch folder: %w", err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, fmt.Errorf("scratch folder %s is a symbolic link: refused, not followed", dir)
	case !fi.IsDir():
		return nil, fmt.Errorf("scratch folder %s is not a folder", dir)
	}
	// CreateTemp opens with O_EXCL: it never follows a link.
	f, err := os.CreateTemp(dir, ".virtkit-import-*")
	if err != nil {
		s.remove()
		return nil, fmt.Errorf("scratch file: %w", err)
	}
	s.f = f
	return s, nil
}

// scratchLimit is the most a downloaded image of a disk of size bytes may
// take: its data plus an eighth and 64 MiB for the format's metadata. A
// larger file cannot hold a disk that fits, and must not fill the volume
// (a folder-backed claim's capacity is not enforced). 0: no limit (a block
// target of unknown size).
func scratchLimit(size int64) int64 {
	if size <= 0 {
		return 0
	}
	return size + size/8 + 64<<20
}

// fill copies r into the scratch file, returning its length. A write error
// is errWrite; more than limit bytes (when limit > 0) is errTooLarge.
func (s *scratch) fill(r io.Reader, limit int64) (int64, error) {
	buf := make([]byte, chunk)
	var n int64
	for {
		m, err := fill(r, buf)
		if limit > 0 && n+int64(m) > limit {
			return n, errTooLarge{limit}
		}
		if m > 0 {
			if _, werr := s.f.Write(buf[:m]); werr != nil {
				return n, errWrite{werr}
			}
			n += int64(m)
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// remove closes and removes the scratch file, and the folder if it was
// made for it.
func (s *scratch) remove() {
	if s.f != nil {
		_ = s.f.Close()
		_ = os.Remove(s.f.Name())
	}
	if s.dir != "" {
		_ = os.Remove(s.dir)
	}
}
