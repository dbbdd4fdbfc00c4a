package importer

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// Target is where the image goes.
type Target struct {
	// Path is the disk image file, created (or emptied) by the import, or
	// with Block an existing block device. A symbolic link there is
	// refused, never followed.
	Path string
	// Block is set when Path is a block device: it is written in place,
	// every byte of the image (a device is not known to read zeros), and
	// neither created, truncated nor removed. A regular file is accepted as
	// a stand-in for a device (tests).
	Block bool
	// Size is the virtual size the disk gets: the usable space of the
	// volume (contract.UsableSpace for a file-system claim). An image whose virtual
	// size exceeds it fails with ReasonTooLarge; a file target ends
	// extended (sparse) to Size. For a block target, 0 means the device's
	// length, and a Size beyond that length is refused.
	Size int64
	// ScratchDir is where an image that must be converted is downloaded
	// first, into a temporary file that is always removed (default
	// os.TempDir()). It is created, and removed again, if missing.
	ScratchDir string
	// NoScratch says there is no scratch space: an image that must be
	// downloaded before it is converted (qcow2, vmdk, vdi, vhd, vhdx) fails
	// with ReasonScratchRequired once its format is read, before anything
	// is written, so that the caller can give it some (as CDI's importer
	// asks for a scratch claim).
	NoScratch bool
	// Preallocate allocates every block of a file target once it is
	// written (CDI's preallocation), so that the disk never runs out of
	// space on a volume the file system overcommits; a file system that
	// cannot allocate ahead fails the import. A block target is left as
	// it is.
	Preallocate bool
	// Archive makes Path an existing folder (not a symbolic link) into
	// which the source, a tar archive (gzip or xz compressed or not), is
	// extracted, as CDI's archive content type; Size bounds the bytes of
	// its files. Block and Preallocate do not apply.
	Archive bool
}

// checkFolder refuses what cannot take an archive.
func (t Target) checkFolder(src string) error {
	fi, err := os.Lstat(t.Path)
	switch {
	case t.Block:
		return fail(ReasonWrite, src, errors.New("an archive is extracted into a folder, not a block device"))
	case err != nil:
		return fail(ReasonWrite, src, err)
	case !fi.IsDir():
		return fail(ReasonWrite, src, fmt.Errorf("%s is not a folder (%s): refused, not followed", t.Path, fi.Mode().Type()))
	case t.Size <= 0:
		return fail(ReasonWrite, src, fmt.Errorf("target size %d must be positive", t.Size))
	}
	return nil
}

// diskMode is a new disk image's mode: QEMU's user or group reads and
// writes it.
const diskMode = 0o660

// check refuses what cannot be a target, before the source is opened, and
// resolves a block target's Size.
func (t Target) check(src string) (Target, error) {
	if t.Path == "" {
		return t, fail(ReasonWrite, src, errors.New("no target path"))
	}
	if t.Archive {
		return t, t.checkFolder(src)
	}
	fi, err := os.Lstat(t.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && !t.Block:
	case err != nil:
		return t, fail(ReasonWrite, src, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return t, fail(ReasonWrite, src, fmt.Errorf("%s is a symbolic link: refused, not followed", t.Path))
	case !fi.Mode().IsRegular() && (!t.Block || fi.Mode()&fs.ModeDevice == 0 || fi.Mode()&fs.ModeCharDevice != 0):
		want := "regular file"
		if t.Block {
			want = "block device"
		}
		return t, fail(ReasonWrite, src, fmt.Errorf("%s is not a %s (%s)", t.Path, want, fi.Mode().Type()))
	}
	if !t.Block {
		if t.Size <= 0 {
			return t, fail(ReasonWrite, src, fmt.Errorf("target size %d must be positive", t.Size))
		}
		return t, nil
	}
	length, err := deviceLength(t.Path)
	if err != nil {
		return t, fail(ReasonWrite, src, err)
	}
	switch {
	case t.Size <= 0:
		t.Size = length
	case t.Size > length:
		return t, fail(ReasonWrite, src, fmt.Errorf("target size %d bytes exceeds the %d bytes of %s", t.Size, length, t.Path))
	}
	return t, nil
}

// deviceLength is the length of a block device (or a regular file).
func deviceLength(path string) (int64, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|oNoFollow, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return 0, fmt.Errorf("length of %s: %w", path, err)
	}
	return n, nil
}

// output is an open target.
type output struct {
	t  Target
	f  *os.File
	fi fs.FileInfo // what was opened, to remove nothing else
}

// open opens a checked target for writing: a file is created or emptied.
func (t Target) open(src string) (*output, error) {
	flag := os.O_RDWR | oNoFollow
	if !t.Block {
		flag |= os.O_CREATE | os.O_TRUNC
	}
	f, err := os.OpenFile(t.Path, flag, diskMode)
	if err != nil {
		return nil, fail(ReasonWrite, src, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fail(ReasonWrite, src, err)
	}
	o := &output{t: t, f: f, fi: fi}
	if !t.Block && !fi.Mode().IsRegular() {
		o.discard()
		return nil, fail(ReasonWrite, src, fmt.Errorf("%s is not a regular file (%s)", t.Path, fi.Mode().Type()))
	}
	return o, nil
}

// finish extends a file target to its size, allocates it if asked, and
// flushes the target.
func (o *output) finish(src string) error {
	if !o.t.Block {
		if err := o.f.Truncate(o.t.Size); err != nil {
			o.discard()
			return fail(ReasonWrite, src, err)
		}
		if o.t.Preallocate {
			if err := preallocate(o.f, o.t.Size); err != nil {
				o.discard()
				return fail(ReasonWrite, src, err)
			}
		}
	}
	if err := o.f.Sync(); err != nil {
		o.discard()
		return fail(ReasonWrite, src, err)
	}
	if err := o.f.Close(); err != nil {
		o.discard()
		return fail(ReasonWrite, src, err)
	}
	return nil
}

// discard closes the target and removes a file target, if the path still
// names the file it opened.
func (o *output) discard() {
	_ = o.f.Close()
	if o.t.Block {
		return
	}
	if fi, err := os.Lstat(o.t.Path); err == nil && os.SameFile(fi, o.fi) {
		_ = os.Remove(o.t.Path)
	}
}
