package confined

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Mode says how a Root treats symbolic links below it.
type Mode uint8

const (
	// NoSymlinks refuses any symbolic link below the root: for folders
	// whose files the node's daemons and the launcher make themselves.
	NoSymlinks Mode = iota
	// InRoot follows symbolic links inside the root, as a process whose
	// root file system it is would: for a pod's root.
	InRoot
)

func (m Mode) String() string {
	switch m {
	case NoSymlinks:
		return "NoSymlinks"
	case InRoot:
		return "InRoot"
	}
	return fmt.Sprintf("Mode(%d)", m)
}

var (
	// ErrNotSocket: DialUnix or SocketPath found something other than a
	// unix socket at the name.
	ErrNotSocket = errors.New("not a unix socket")
	// ErrNotRegular: ReadFile found something other than a regular file.
	ErrNotRegular = errors.New("not a regular file")
	// ErrTooLarge: ReadFile found a file longer than its limit.
	ErrTooLarge = errors.New("file larger than its limit")
	// ErrUnsupported: this system cannot do the operation confined.
	ErrUnsupported = errors.ErrUnsupported
)

// pathError names the operation and the name as a path below the root.
func pathError(op, root, name string, err error) error {
	return &fs.PathError{Op: op, Path: filepath.Join(root, name), Err: err}
}

// CreateTemp creates a new file in the folder dir below the root, named by
// pattern with its last "*" replaced by a random string (appended when
// there is none), open for reading and writing with mode 0600. It returns
// the file and its name below the root.
func (r *Root) CreateTemp(dir, pattern string) (*os.File, string, error) {
	prefix, suffix := pattern, ""
	if i := strings.LastIndex(pattern, "*"); i >= 0 {
		prefix, suffix = pattern[:i], pattern[i+1:]
	}
	for range 100 {
		name := path.Join(dir, prefix+rand.Text()+suffix)
		f, err := r.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, name, err
	}
	return nil, "", pathError("createtemp", r.name, path.Join(dir, pattern), fs.ErrExist)
}

func sortEntries(ents []fs.DirEntry) {
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
}

// readLimited reads f, the file name, to its end: at most limit bytes.
func (r *Root) readLimited(f io.Reader, name string, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, pathError("read", r.name, name, err)
	}
	if int64(len(b)) > limit {
		return nil, pathError("read", r.name, name, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit))
	}
	return b, nil
}
