package importer

import (
	"archive/tar"
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
)

// FormatArchive is Result.Format of an archive extracted into a folder
// (Target.Archive).
const FormatArchive = "tar"

// tarMagic is what a POSIX (ustar, pax or GNU) tar header holds at
// offset 257.
var tarMagic = []byte("ustar")

// extract unpacks the tar archive r holds into the target folder, as CDI's
// archive content type (tar --no-same-owner --preserve-permissions):
// folders, regular files with their permission bits, symbolic and hard
// links. Members are made through an os.Root of the folder, so that no
// name, nor a link made earlier, leads a write outside it (links are made
// as the archive has them); a member whose name has a ".." element fails
// the import. Device files and FIFOs are skipped. The bytes of
// regular files may not exceed the target's Size. On failure, what the
// archive made that was not there before is removed. It returns the bytes
// written.
func (j *job) extract(r *bufio.Reader) (int64, error) {
	head, err := r.Peek(512)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, j.readError(err)
	}
	if len(head) < 512 || !bytes.Equal(head[257:262], tarMagic) {
		return 0, fail(ReasonUnsupportedFormat, j.name, errors.New("not a tar archive, which content type archive requires"))
	}
	root, err := os.OpenRoot(j.dst.Path)
	if err != nil {
		return 0, fail(ReasonWrite, j.name, err)
	}
	defer root.Close()
	x := &extraction{j: j, root: root, made: map[string]bool{}}
	n, err := x.run(tar.NewReader(r))
	if err != nil {
		x.undo()
	}
	return n, err
}

// extraction is one archive being unpacked.
type extraction struct {
	j       *job
	root    *os.Root
	written int64
	// made are the top-level names the archive made.
	made map[string]bool
}

func (x *extraction) run(tr *tar.Reader) (int64, error) {
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return x.written, nil
		}
		if err != nil {
			return x.written, x.tarError(err)
		}
		name, err := memberName(h.Name)
		if err != nil {
			return x.written, fail(ReasonCorrupt, x.j.name, err)
		}
		if name == "." {
			continue
		}
		if err := x.member(h, name, tr); err != nil {
			return x.written, err
		}
	}
}

// member makes one member of the archive.
func (x *extraction) member(h *tar.Header, name string, tr *tar.Reader) error {
	perm := fs.FileMode(h.Mode).Perm()
	switch h.Typeflag {
	case tar.TypeDir:
		// Its owner writes in it, to make what it holds.
		if err := x.mkdirAll(name, perm|0o700); err != nil {
			return x.wrote(name, err)
		}
		return x.wrote(name, x.root.Chmod(name, perm|0o700))
	case tar.TypeReg: // the reader turns the old TypeRegA into TypeReg
		if err := x.mkdirAll(path.Dir(name), 0o755); err != nil {
			return x.wrote(name, err)
		}
		return x.file(name, perm, tr)
	case tar.TypeSymlink:
		if err := x.mkdirAll(path.Dir(name), 0o755); err != nil {
			return x.wrote(name, err)
		}
		return x.wrote(name, x.replace(name, func() error { return x.root.Symlink(h.Linkname, name) }))
	case tar.TypeLink:
		target, err := memberName(h.Linkname)
		if err != nil {
			return fail(ReasonCorrupt, x.j.name, fmt.Errorf("hard link %s: %w", name, err))
		}
		if err := x.mkdirAll(path.Dir(name), 0o755); err != nil {
			return x.wrote(name, err)
		}
		return x.wrote(name, x.replace(name, func() error { return x.root.Link(target, name) }))
	}
	x.j.log.V(1).Info("archive member skipped", "member", name, "type", string(h.Typeflag))
	return nil
}

// file writes a regular file from tr, within the target's Size.
func (x *extraction) file(name string, perm fs.FileMode, tr *tar.Reader) error {
	x.note(name)
	f, err := x.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return x.wrote(name, err)
	}
	left := x.j.dst.Size - x.written
	w := &recordingWriter{w: f}
	n, err := io.Copy(w, io.LimitReader(tr, left+1))
	x.written += n
	if cerr := f.Close(); err == nil && cerr != nil {
		err, w.err = cerr, cerr
	}
	switch {
	case n > left:
		return x.j.tooLarge(x.written)
	case err != nil && w.err != nil:
		return x.wrote(name, err)
	case err != nil:
		return x.tarError(err)
	}
	// The mode was masked by the umask on creation.
	return x.wrote(name, x.root.Chmod(name, perm))
}

// recordingWriter remembers its writer's error, to tell a failed write
// from a failed read.
type recordingWriter struct {
	w   io.Writer
	err error
}

func (r *recordingWriter) Write(p []byte) (int, error) {
	n, err := r.w.Write(p)
	if err != nil {
		r.err = err
	}
	return n, err
}

// mkdirAll makes dir and its parents in the root.
func (x *extraction) mkdirAll(dir string, perm fs.FileMode) error {
	if dir == "." {
		return nil
	}
	x.note(dir)
	return x.root.MkdirAll(dir, perm)
}

// replace runs mk, first removing what is at name if mk finds it taken,
// as tar replaces an earlier member of the same name.
func (x *extraction) replace(name string, mk func() error) error {
	x.note(name)
	err := mk()
	if errors.Is(err, fs.ErrExist) {
		if err := x.root.Remove(name); err != nil {
			return err
		}
		err = mk()
	}
	return err
}

// note records name's top-level folder or file if the archive makes it.
func (x *extraction) note(name string) {
	top, _, _ := strings.Cut(name, "/")
	if _, seen := x.made[top]; seen {
		return
	}
	_, err := x.root.Lstat(top)
	x.made[top] = errors.Is(err, fs.ErrNotExist)
}

// undo removes what the archive made.
func (x *extraction) undo() {
	for top, made := range x.made {
		if made {
			_ = x.root.RemoveAll(top)
		}
	}
}

// wrote turns a file system error about member name into the import's.
func (x *extraction) wrote(name string, err error) error {
	if err == nil {
		return nil
	}
	return fail(ReasonWrite, x.j.name, fmt.Errorf("archive member %s: %w", name, err))
}

// tarError classifies an error of the tar reader: the source's, or a
// corrupt archive.
func (x *extraction) tarError(err error) error {
	if x.j.ctx.Err() != nil || x.j.cnt.err != nil {
		return x.j.readError(err)
	}
	return fail(ReasonCorrupt, x.j.name, fmt.Errorf("tar archive: %w", err))
}

// memberName is a member's name relative to the folder, "." for the folder
// itself; a name that leaves it (a ".." element) is an error. Leading
// slashes are dropped, as tar does.
func memberName(name string) (string, error) {
	clean := path.Clean("/" + name)[1:]
	if clean == "" {
		return ".", nil
	}
	for _, el := range strings.Split(name, "/") {
		if el == ".." {
			return "", fmt.Errorf("archive member %q names a place outside the volume", name)
		}
	}
	return clean, nil
}
