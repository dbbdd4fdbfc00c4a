package export

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"

	"github.com/go-logr/logr"

	"github.com/virtkit/virtkit/virt/confined"
)

// openImage opens the disk image of a file system volume: its disk.img,
// a regular file, never through a link.
func openImage(root *confined.Root) (*os.File, error) {
	f, err := root.OpenReadable(rawName)
	if err != nil {
		return nil, absent(rawName, err)
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = confined.ErrNotRegular // a folder
		}
		return nil, absent(rawName, err)
	}
	return f, nil
}

// absent is how a volume's file that could not be opened is answered: a
// link, a FIFO, a device or a missing file reads as absent (404), so a
// claim's content cannot make the server open it; only a permission
// problem stays what it is.
func absent(name string, err error) error {
	if errors.Is(err, fs.ErrPermission) {
		return err
	}
	return &fs.PathError{Op: "open", Path: name, Err: fmt.Errorf("%w (%w)", fs.ErrNotExist, err)}
}

// errNotBlock: a Block volume's path is not a block device.
var errNotBlock = errors.New("not a block device")

// openDevice opens the block device of a Block volume. The path is the
// kubelet's (volumeDevices), but a link or another kind of file there is
// refused all the same.
func openDevice(name string) (*os.File, error) {
	fi, err := os.Lstat(name)
	if err != nil {
		return nil, err
	}
	if m := fi.Mode(); m&fs.ModeDevice == 0 || m&fs.ModeCharDevice != 0 {
		return nil, fmt.Errorf("%s: %w (%s)", name, errNotBlock, m.Type())
	}
	return os.Open(name)
}

// rootFS is a volume's folder as an fs.FS for http.FileServer: names are
// resolved inside it with no link followed, and only files and folders
// are opened.
type rootFS struct{ root *confined.Root }

func (r rootFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	f, err := r.root.OpenReadable(name)
	if err != nil {
		return nil, absent(name, err)
	}
	return f, nil
}

// lostFound is the folder a file system's root has for fsck, left out of
// archives as KubeVirt leaves it.
const lostFound = "lost+found"

// writeTar writes the folder root as a tar stream: folders and regular
// files with their modes and times; links, devices, FIFOs and sockets are
// left out (and logged), as is the root's lost+found.
func writeTar(ctx context.Context, w io.Writer, root *confined.Root, log logr.Logger) error {
	tw := tar.NewWriter(w)
	buf := make([]byte, copyBuffer)
	var walk func(dir string) error
	walk = func(dir string) error {
		ents, err := root.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, e := range ents {
			if err := ctx.Err(); err != nil {
				return err
			}
			name := path.Join(dir, e.Name())
			if dir == "." && e.Name() == lostFound {
				continue
			}
			fi, err := root.Lstat(name)
			if errors.Is(err, fs.ErrNotExist) {
				continue // removed since the listing
			} else if err != nil {
				return err
			}
			switch {
			case fi.IsDir():
				if err := writeHeader(tw, fi, name+"/"); err != nil {
					return err
				}
				if err := walk(name); err != nil {
					return err
				}
			case fi.Mode().IsRegular():
				if err := writeFile(tw, root, name, buf); err != nil {
					return err
				}
			default:
				log.Info("left out of the archive", "name", name, "type", fi.Mode().Type().String())
			}
		}
		return nil
	}
	if err := walk("."); err != nil {
		return err
	}
	return tw.Close()
}

// writeHeader writes the tar header of fi as name.
func writeHeader(tw *tar.Writer, fi fs.FileInfo, name string) error {
	h, err := tar.FileInfoHeader(fi, "")
	if err != nil {
		return err
	}
	h.Name = name
	h.Uname, h.Gname = "", ""
	return tw.WriteHeader(h)
}

// writeFile writes the regular file name with its header, the size its
// open handle had: a file that shrinks meanwhile breaks the stream.
func writeFile(tw *tar.Writer, root *confined.Root, name string, buf []byte) error {
	f, err := root.OpenReadable(name)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s: %w", name, confined.ErrNotRegular)
	}
	if err := writeHeader(tw, fi, name); err != nil {
		return err
	}
	n, err := io.CopyBuffer(tw, io.LimitReader(f, fi.Size()), buf)
	if err == nil && n < fi.Size() {
		err = fmt.Errorf("%s: %d of %d bytes: %w", name, n, fi.Size(), io.ErrUnexpectedEOF)
	}
	return err
}
