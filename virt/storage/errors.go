package storage

import (
	"errors"
	"strings"
)

// Sentinel errors; a *VolumeError wraps one. Branch with errors.Is.
var (
	// ErrNotFound: a file, folder or device the volume needs is missing.
	ErrNotFound = errors.New("not found")
	// ErrImageTooLarge: a disk image's virtual size exceeds its claim's capacity.
	ErrImageTooLarge = errors.New("image larger than its volume")
	// ErrUnknownFormat: the image is neither raw nor qcow2 (or is a qcow2
	// variant QEMU would not open as such: version 1, encrypted).
	ErrUnknownFormat = errors.New("unknown image format")
	// ErrUnsafeImage: a qcow2 image refers to other host files (a backing
	// file, an external data file). A guest that can write a raw disk can
	// write such a header into it, so only overlays virtkit made itself may
	// have them.
	ErrUnsafeImage = errors.New("image refers to other files")
	// ErrUnsupported: a volume source virtkit does not implement.
	ErrUnsupported = errors.New("volume source not supported")
	// ErrInvalid: the volume's spec or facts cannot work (no capacity, a
	// missing secret key, a file name an ISO 9660 disk cannot carry).
	ErrInvalid = errors.New("invalid volume")
)

// VolumeError says which volume failed and why.
type VolumeError struct {
	// Volume is the VMI volume's name.
	Volume string
	// Field is the spec path of the volume source, e.g.
	// spec.volumes[2].persistentVolumeClaim.
	Field string
	// Path is the file or device concerned, if any.
	Path string
	// Detail is a human reason.
	Detail string
	// Err is a sentinel of this package, or the underlying error.
	Err error
}

func (e *VolumeError) Error() string {
	var b strings.Builder
	b.WriteString("volume ")
	b.WriteString(quote(e.Volume))
	if e.Field != "" {
		b.WriteString(" (" + e.Field + ")")
	}
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path + ": ")
	}
	if e.Detail != "" {
		b.WriteString(e.Detail)
		if e.Err != nil {
			b.WriteString(": ")
		}
	}
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *VolumeError) Unwrap() error { return e.Err }

func quote(s string) string { return `"` + s + `"` }
