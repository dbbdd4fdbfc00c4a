package importer

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/ulikunitz/xz"

	"github.com/virtkit/virtkit/virt/storage"
)

// Compressions, as Result.Compression names them.
const (
	CompressionNone = ""
	CompressionGzip = "gzip"
	CompressionXZ   = "xz"
)

const (
	gzipMagic = "\x1f\x8b"
	xzMagic   = "\xfd7zXZ\x00"
	// headSize is how much of the (decompressed) image is read to tell its
	// format: the first qcow2 cluster, as storage.DetectFormat reads.
	headSize = 64 << 10
)

// decompress looks at the first bytes of r and undoes gzip or xz while
// reading; xz with the program xzPath when it is set. stop ends what it
// started; the caller calls it when done.
func decompress(ctx context.Context, r *bufio.Reader, xzPath string) (comp string, out io.Reader, stop func(), err error) {
	comp, out, err = decompressGo(r, xzPath == "")
	if comp != CompressionXZ || xzPath == "" {
		return comp, out, func() {}, err
	}
	p, err := startXZ(ctx, xzPath, r)
	if err != nil {
		return comp, nil, func() {}, err
	}
	return comp, p, p.stop, nil
}

// decompressGo undoes gzip, and xz when goXZ, with Go's decoders.
func decompressGo(r *bufio.Reader, goXZ bool) (string, io.Reader, error) {
	magic, err := r.Peek(len(xzMagic))
	if err != nil && !errors.Is(err, io.EOF) {
		return "", nil, err
	}
	switch {
	case bytes.HasPrefix(magic, []byte(gzipMagic)):
		z, err := gzip.NewReader(r)
		if err != nil {
			return CompressionGzip, nil, fmt.Errorf("gzip: %w", err)
		}
		return CompressionGzip, z, nil
	case bytes.HasPrefix(magic, []byte(xzMagic)) && !goXZ:
		return CompressionXZ, nil, nil
	case bytes.HasPrefix(magic, []byte(xzMagic)):
		z, err := xz.NewReader(r)
		if err != nil {
			return CompressionXZ, nil, err
		}
		return CompressionXZ, z, nil
	}
	return CompressionNone, r, nil
}

// Formats, as Result.Format names them (qemu-img's names).
const (
	FormatRaw   = string(storage.FormatRaw)
	FormatQCOW2 = string(storage.FormatQCOW2)
	FormatVMDK  = "vmdk"
	FormatVDI   = "vdi"
	FormatVPC   = "vpc"
	FormatVHDX  = "vhdx"
)

// converted says which formats qemu-img converts to raw here.
func converted(format string) bool {
	switch format {
	case FormatQCOW2, FormatVMDK, FormatVDI, FormatVPC, FormatVHDX:
		return true
	}
	return false
}

// detectFormat names the image r holds (size bytes long), read from its header,
// or refuses it with an error wrapping storage.ErrUnknownFormat or
// storage.ErrUnsafeImage (an unreadable header is any other error).
func detectFormat(r io.ReaderAt, size int64) (string, storage.ImageInfo, error) {
	info, err := storage.DetectFormat(r, size)
	if err != nil {
		return "", info, err
	}
	name := string(info.Format)
	if name == "" {
		name = info.Detected
	}
	if name != FormatRaw && !converted(name) {
		return name, info, fmt.Errorf("%w: %s images are not imported", storage.ErrUnknownFormat, name)
	}
	head := make([]byte, vmdkHeadSize)
	n, err := r.ReadAt(head, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return name, info, err
	}
	if err := safe(name, info, head[:n]); err != nil {
		return name, info, err
	}
	return name, info, nil
}

// vmdkHeadSize is how much of a VMDK safe reads.
const vmdkHeadSize = 64

// safe refuses an image whose header makes QEMU open other files: a guest
// that wrote the image (or whoever serves it) must not make the importer
// read the importer's files into the disk.
func safe(format string, info storage.ImageInfo, head []byte) error {
	switch format {
	case FormatQCOW2:
		if info.BackingFile != "" {
			return fmt.Errorf("%w: the qcow2 image has a backing file %q; an imported image may not refer to other files", storage.ErrUnsafeImage, info.BackingFile)
		}
		if info.ExternalData {
			return fmt.Errorf("%w: the qcow2 image keeps its data in an external file; an imported image may not refer to other files", storage.ErrUnsafeImage)
		}
	case FormatVMDK:
		if bytes.HasPrefix(head, []byte("# Disk DescriptorFile")) {
			return fmt.Errorf("%w: a VMDK descriptor keeps its data in other files (extents); import a single-file VMDK", storage.ErrUnsafeImage)
		}
		// A sparse VMDK (KDMV) of capacity 0 takes its extents from its
		// embedded descriptor, which may name any file.
		if bytes.HasPrefix(head, []byte("KDMV")) && len(head) >= 20 && binary.LittleEndian.Uint64(head[12:]) == 0 {
			return fmt.Errorf("%w: the VMDK header has no capacity, so QEMU would read extents its descriptor names in other files", storage.ErrUnsafeImage)
		}
	}
	return nil
}
