package images

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// layerWriter writes one layer: a tar stream, gzip-compressed into a file,
// every entry's times fixed and owner names cleared, each path once.
type layerWriter struct {
	f     *os.File
	gz    *gzip.Writer
	tw    *tar.Writer
	epoch time.Time
	seen  map[string]byte // path -> tar type flag
}

func newLayerWriter(file string, epoch time.Time) (*layerWriter, error) {
	f, err := os.OpenFile(file, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	gz, err := gzip.NewWriterLevel(f, gzip.DefaultCompression)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &layerWriter{f: f, gz: gz, tw: tar.NewWriter(gz), epoch: epoch, seen: map[string]byte{}}, nil
}

// errDuplicate reports a path a layer already holds as something else.
var errDuplicate = errors.New("already in the layer")

// add writes h, and for a regular file its size bytes from r. A folder
// already written is skipped; any other path written twice is an error
// wrapping errDuplicate.
func (l *layerWriter) add(h *tar.Header, r io.Reader) error {
	name := cleanName(h.Name)
	if name == "" {
		return nil // the root folder
	}
	if prev, ok := l.seen[name]; ok {
		if prev == tar.TypeDir && h.Typeflag == tar.TypeDir {
			return nil
		}
		return fmt.Errorf("%s: %w", name, errDuplicate)
	}
	n := &tar.Header{
		Typeflag: h.Typeflag,
		Name:     name,
		Linkname: h.Linkname,
		Size:     h.Size,
		Mode:     h.Mode,
		Uid:      h.Uid,
		Gid:      h.Gid,
		ModTime:  l.epoch,
		Format:   tar.FormatPAX,
	}
	switch h.Typeflag {
	case tar.TypeDir:
		n.Name += "/"
		n.Size = 0
	case tar.TypeReg:
	case tar.TypeSymlink:
		n.Size = 0
	case tar.TypeLink:
		n.Linkname = cleanName(h.Linkname)
		n.Size = 0
	default:
		return fmt.Errorf("%s: tar entry type %q is not allowed in an image", name, h.Typeflag)
	}
	if err := l.tw.WriteHeader(n); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if n.Typeflag == tar.TypeReg {
		if _, err := io.CopyN(l.tw, r, n.Size); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	l.seen[name] = n.Typeflag
	return nil
}

// dir adds a folder owned by root.
func (l *layerWriter) dir(name string, mode int64) error {
	return l.add(&tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: mode}, nil)
}

// file adds a regular file owned by root with content b.
func (l *layerWriter) file(name string, mode int64, b []byte) error {
	return l.add(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(b))}, strings.NewReader(string(b)))
}

// close finishes the layer's file. On error the file is incomplete.
func (l *layerWriter) close() error {
	return errors.Join(l.tw.Close(), l.gz.Close(), l.f.Close())
}

// abort closes the file after a failure.
func (l *layerWriter) abort() { _ = l.f.Close() }

// cleanName makes a tar path relative and clean: "./usr/bin/" is "usr/bin",
// "./" is "".
func cleanName(name string) string {
	name = path.Clean("/" + name)
	return strings.TrimPrefix(name, "/")
}

// openLayer returns the layer of a finished, gzip-compressed layer file.
func openLayer(file string) (v1.Layer, error) {
	return tarball.LayerFromFile(file, tarball.WithMediaType(types.OCILayer))
}
