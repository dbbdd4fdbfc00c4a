package unpack

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// OCI whiteouts: a layer's .wh.NAME removes NAME of the layers below, its
// .wh..wh..opq empties its folder of them.
const (
	whiteoutPrefix = ".wh."
	whiteoutOpaque = ".wh..wh..opq"
)

// Image writes img's layers, lowest first, into the folder dir as a
// container runtime does. Every entry stays inside dir: paths are resolved
// in an os.Root of dir, so neither ".." nor a link (one of the image's or
// one a layer made) leads out; device nodes and FIFOs are not made.
func Image(ctx context.Context, img v1.Image, dir string) error {
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	u := &unpacker{root: root, chown: os.Geteuid() == 0, dirModes: map[string]fs.FileMode{}}
	for i, l := range layers {
		if err := ctx.Err(); err != nil {
			return err
		}
		d, _ := l.Digest()
		rc, err := l.Uncompressed()
		if err != nil {
			return fmt.Errorf("layer %d (%s): %w", i, d, err)
		}
		err = u.layer(rc)
		if err == nil {
			// Read to the end: the layer's digest is checked there.
			_, err = io.Copy(io.Discard, rc)
		}
		if cerr := rc.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("layer %d (%s): %w", i, d, err)
		}
	}
	return u.finish()
}

// unpacker applies layers to a root folder.
type unpacker struct {
	root *os.Root
	// chown gives entries their owners; as another user than root,
	// everything is the user's.
	chown bool
	// dirModes are the folders' modes, applied once every layer is
	// written (a read-only folder's entries come after it).
	dirModes map[string]fs.FileMode
	// own are the paths the current layer wrote, and their folders: a
	// whiteout only removes what lower layers wrote.
	own map[string]bool
}

// layer applies one layer's tar stream.
func (u *unpacker) layer(r io.Reader) error {
	u.own = map[string]bool{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := u.entry(tr, h); err != nil {
			return fmt.Errorf("%s: %w", h.Name, err)
		}
	}
}

// finish gives the folders their modes.
func (u *unpacker) finish() error {
	for p, mode := range u.dirModes {
		if err := u.root.Chmod(p, mode); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// errEscapes refuses an entry that would leave the image's root.
var errEscapes = errors.New("leaves the image's root")

// cleanPath is an entry's path relative to the root ("." for the root).
func cleanPath(name string) (string, error) {
	p := path.Clean(strings.TrimLeft(name, "/"))
	if p == ".." || strings.HasPrefix(p, "../") {
		return "", errEscapes
	}
	return p, nil
}

// mode is the permission part of an entry's mode.
func mode(h *tar.Header) fs.FileMode {
	m := h.FileInfo().Mode()
	return m.Perm() | m&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)
}

func (u *unpacker) entry(r io.Reader, h *tar.Header) error {
	root := u.root
	p, err := cleanPath(h.Name)
	if err != nil {
		return err
	}
	dir, base := path.Split(p)
	dir = path.Clean(dir)
	switch {
	case base == whiteoutOpaque:
		return u.opaque(dir)
	case strings.HasPrefix(base, whiteoutPrefix):
		target := strings.TrimPrefix(base, whiteoutPrefix)
		if target == "" || target == "." || target == ".." {
			return fmt.Errorf("not a whiteout")
		}
		if u.own[path.Join(dir, target)] {
			return nil // a whiteout hides the layers below only
		}
		return root.RemoveAll(path.Join(dir, target))
	}
	switch h.Typeflag {
	case tar.TypeDir, tar.TypeReg, tar.TypeSymlink, tar.TypeLink:
	default:
		// Device nodes, FIFOs (which a pod's view of the host does not
		// need) and tar's own records are not made.
		return nil
	}
	for d := p; d != "."; d = path.Dir(d) {
		u.own[d] = true
	}
	if p != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	old, err := root.Lstat(p)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if h.Typeflag == tar.TypeDir {
		if exists && !old.IsDir() {
			if err := root.Remove(p); err != nil {
				return err
			}
			exists = false
		}
		if !exists {
			if err := root.Mkdir(p, 0o755); err != nil {
				return err
			}
		}
		u.dirModes[p] = mode(h)
		return u.lchown(p, h)
	}
	if p == "." {
		return errors.New("the image's root is a folder")
	}
	if exists {
		if err := root.RemoveAll(p); err != nil {
			return err
		}
	}
	delete(u.dirModes, p)
	switch h.Typeflag {
	case tar.TypeSymlink:
		if err := root.Symlink(h.Linkname, p); err != nil {
			return err
		}
		return u.lchown(p, h)
	case tar.TypeLink:
		target, err := cleanPath(h.Linkname)
		if err != nil {
			return fmt.Errorf("hard link to %s: %w", h.Linkname, err)
		}
		return root.Link(target, p) // the target's owner and mode are the link's
	}
	f, err := root.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := u.lchown(p, h); err != nil {
		return err
	}
	return root.Chmod(p, mode(h)) // after chown, which drops setuid
}

// lchown gives p the entry's owner.
func (u *unpacker) lchown(p string, h *tar.Header) error {
	if !u.chown {
		return nil
	}
	return u.root.Lchown(p, h.Uid, h.Gid)
}

// opaque empties dir of what lower layers put there.
func (u *unpacker) opaque(dir string) error {
	f, err := u.root.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return err
	}
	for _, n := range names {
		if p := path.Join(dir, n); !u.own[p] {
			if err := u.root.RemoveAll(p); err != nil {
				return err
			}
		}
	}
	return nil
}
