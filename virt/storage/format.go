package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// ImageInfo is what an image's own bytes say about it.
type ImageInfo struct {
	// Format is raw or qcow2; empty when the image is of another format
	// (then Detected names it).
	Format Format `json:"format,omitempty"`
	// Detected names a recognised format that virtkit does not run
	// ("vmdk", "vdi", "qcow (version 1)", ...).
	Detected string `json:"detected,omitempty"`
	// VirtualSize is the size the guest sees: the qcow2 header's size, or
	// the length of a raw file or device.
	VirtualSize int64 `json:"virtualSize"`
	// Length is the file's or device's length in bytes, whatever its
	// format: the size of the image read as raw.
	Length int64 `json:"length,omitempty"`
	// Block is set when the image is a block device.
	Block bool `json:"block,omitempty"`
	// BackingFile and BackingFormat are a qcow2 image's backing image, as
	// its header names them.
	BackingFile   string `json:"backingFile,omitempty"`
	BackingFormat string `json:"backingFormat,omitempty"`
	// ExternalData is set when a qcow2 image keeps its data in another file.
	ExternalData bool `json:"externalData,omitempty"`
}

const (
	qcow2Magic          = "QFI\xfb"
	qcow2HeaderV2Length = 72
	qcow2ExtEnd         = 0x00000000
	qcow2ExtBackingFmt  = 0xe2792aca
	qcow2ExtDataFile    = 0x44415441
	qcow2IncompatData   = 1 << 2 // external data file
	qcow2MaxBackingName = 1023
	qcow2HeaderReadSize = 64 << 10 // the first cluster holds the header, its extensions and the backing name
)

// foreignMagics are formats recognised by their first bytes that QEMU could
// open but virtkit does not run: naming them beats calling them raw.
var foreignMagics = []struct {
	off   int
	magic string
	name  string
}{
	{0, "KDMV", "vmdk"},
	{0, "# Disk DescriptorFile", "vmdk"},
	{0, "COWD", "vmdk"},
	{0, "vhdxfile", "vhdx"},
	{0, "conectix", "vpc"},
	{0, "QED\x00", "qed"},
	{0, "LUKS\xba\xbe", "luks"},
	{0, "WithoutFreeSpace", "parallels"},
	{0, "WithouFreSpacExt", "parallels"},
	{0, "Bochs Virtual HD Image", "bochs"},
	{0x40, "\x7f\x10\xda\xbe", "vdi"},
}

// DetectFormat reads an image's header from r, whose length is size (the
// file's or device's length), and reports its format and virtual size. It
// never looks at a name. Anything without a known magic is raw.
func DetectFormat(r io.ReaderAt, size int64) (ImageInfo, error) {
	head := make([]byte, qcow2HeaderReadSize)
	n, err := r.ReadAt(head, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return ImageInfo{}, fmt.Errorf("reading the image header: %w", err)
	}
	head = head[:n]
	if bytes.HasPrefix(head, []byte(qcow2Magic)) {
		info, err := parseQCOW2(head)
		info.Length = size
		return info, err
	}
	for _, m := range foreignMagics {
		if len(head) >= m.off+len(m.magic) && string(head[m.off:m.off+len(m.magic)]) == m.magic {
			return ImageInfo{Detected: m.name, VirtualSize: size, Length: size}, nil
		}
	}
	return ImageInfo{Format: FormatRaw, VirtualSize: size, Length: size}, nil
}

// parseQCOW2 reads a qcow2 header (version 2 or 3) and its extensions.
func parseQCOW2(h []byte) (ImageInfo, error) {
	if len(h) < qcow2HeaderV2Length {
		return ImageInfo{}, fmt.Errorf("qcow2 header truncated at %d bytes", len(h))
	}
	be := binary.BigEndian
	version := be.Uint32(h[4:])
	info := ImageInfo{Format: FormatQCOW2, VirtualSize: int64(be.Uint64(h[24:]))}
	switch version {
	case 1:
		return ImageInfo{Detected: "qcow (version 1)", VirtualSize: info.VirtualSize}, nil
	case 2, 3:
	default:
		return ImageInfo{Detected: fmt.Sprintf("qcow2 version %d", version)}, nil
	}
	if info.VirtualSize < 0 {
		return ImageInfo{}, fmt.Errorf("qcow2 virtual size %d out of range", be.Uint64(h[24:]))
	}
	if crypt := be.Uint32(h[32:]); crypt != 0 {
		return ImageInfo{Detected: "qcow2 (encrypted)", VirtualSize: info.VirtualSize}, nil
	}
	backingOff, backingLen := be.Uint64(h[8:]), uint64(be.Uint32(h[16:]))
	if backingOff != 0 && backingLen > 0 {
		// Compared one at a time: backingOff+backingLen could wrap.
		if backingLen > qcow2MaxBackingName || backingOff > uint64(len(h)) || backingLen > uint64(len(h))-backingOff {
			// Outside the first cluster: no sane writer puts it there.
			info.BackingFile = "(unreadable)"
		} else {
			info.BackingFile = string(h[backingOff : backingOff+backingLen])
		}
	}
	extStart := uint64(qcow2HeaderV2Length)
	if version == 3 {
		if len(h) < 104 {
			return ImageInfo{}, fmt.Errorf("qcow2 v3 header truncated at %d bytes", len(h))
		}
		if be.Uint64(h[72:])&qcow2IncompatData != 0 {
			info.ExternalData = true
		}
		extStart = uint64(be.Uint32(h[100:]))
	}
	// Header extensions: (type u32, length u32, data padded to 8), ending
	// with type 0.
	for off := extStart; off+8 <= uint64(len(h)); {
		typ, l := be.Uint32(h[off:]), uint64(be.Uint32(h[off+4:]))
		if typ == qcow2ExtEnd {
			break
		}
		data := off + 8
		if data+l > uint64(len(h)) {
			break
		}
		switch typ {
		case qcow2ExtBackingFmt:
			info.BackingFormat = string(h[data : data+l])
		case qcow2ExtDataFile:
			info.ExternalData = true
		}
		off = data + (l+7)/8*8
	}
	return info, nil
}
