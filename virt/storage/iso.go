package storage

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kdomanski/iso9660"
)

// Volume labels the guest's cloud-init looks for.
const (
	NoCloudLabel     = "cidata"
	ConfigDriveLabel = "config-2"
)

// The ISO disks are plain ISO 9660 (no Rock Ridge, no Joliet): Linux's isofs
// shows such names in lower case without the ";1" version, which is what
// cloud-init reads (meta-data, openstack/latest/meta_data.json). The writer
// would silently mangle anything else (upper case, several dots, long
// names), so such names are refused instead.
const (
	isoMaxName = 28 // 30 for the identifier less ";1"
	isoMaxExt  = 8
	isoMaxDir  = 31
	isoMaxDeep = 7 // below the root
)

func isoNameChar(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-'
}

// checkISOPath says whether a slash-separated relative path can be stored
// on a plain ISO 9660 disk and read back by the guest unchanged.
func checkISOPath(p string) error {
	parts := strings.Split(p, "/")
	if len(parts) > isoMaxDeep+1 {
		return fmt.Errorf("file %q is nested deeper than %d folders", p, isoMaxDeep)
	}
	for i, part := range parts {
		last := i == len(parts)-1
		name, ext := part, ""
		if last {
			if j := strings.IndexByte(part, '.'); j >= 0 {
				name, ext = part[:j], part[j+1:]
				if ext == "" || len(ext) > isoMaxExt {
					return fmt.Errorf("file %q: an ISO 9660 disk name has at most one dot and an extension of 1 to %d characters", p, isoMaxExt)
				}
			}
		}
		n := len(name)
		if ext != "" {
			n += 1 + len(ext)
		}
		limit := isoMaxName
		if !last {
			limit = isoMaxDir
		}
		if name == "" || n > limit {
			return fmt.Errorf("file %q: name %q must have 1 to %d characters on an ISO 9660 disk", p, part, limit)
		}
		if strings.IndexFunc(name+ext, func(r rune) bool { return !isoNameChar(r) }) >= 0 {
			return fmt.Errorf("file %q: an ISO 9660 disk without Rock Ridge keeps only lower-case letters, digits, '-' and '_' (and one '.') in names", p)
		}
	}
	return nil
}

// checkISOLabel accepts volume labels that blkid and cloud-init read back as written.
func checkISOLabel(l string) error {
	if len(l) > 32 {
		return fmt.Errorf("label %q is longer than 32 characters", l)
	}
	for _, r := range l {
		if !(r >= 'A' && r <= 'Z' || isoNameChar(r)) {
			return fmt.Errorf("label %q may hold only letters, digits, '-' and '_'", l)
		}
	}
	return nil
}

// WriteISO writes a plain ISO 9660 image labelled label and holding files
// (slash-separated relative path to content) to w, from its first byte on.
func WriteISO(w io.Writer, label string, files map[string][]byte) error {
	if err := checkISOLabel(label); err != nil {
		return err
	}
	names := make([]string, 0, len(files))
	for p := range files {
		if err := checkISOPath(p); err != nil {
			return err
		}
		names = append(names, p)
	}
	sort.Strings(names)
	iw, err := iso9660.NewWriter()
	if err != nil {
		return fmt.Errorf("iso9660: %w", err)
	}
	defer iw.Cleanup()
	for _, p := range names {
		if err := iw.AddFile(bytes.NewReader(files[p]), p); err != nil {
			return fmt.Errorf("iso9660: adding %s: %w", p, err)
		}
	}
	cw := &countingWriter{w: w}
	if err := iw.WriteTo(cw, label); err != nil {
		return fmt.Errorf("iso9660: %w", err)
	}
	// The image must hold the whole volume its descriptor declares, in
	// whole sectors, or a guest reading it runs past the end. Then come
	// 150 zero sectors, as genisoimage pads: busybox findfs (how the test
	// guest finds "cidata") reads 68 KiB from the start of a device and
	// skips the device when that read is short, and a small cloud-init
	// image is shorter than that.
	end := max(cw.n, cw.volumeSectors*isoSector)
	end = (end+isoSector-1)/isoSector*isoSector + isoPadSectors*isoSector
	if end > cw.n {
		if _, err := w.Write(make([]byte, end-cw.n)); err != nil {
			return err
		}
	}
	return nil
}

const (
	isoSector     = 2048
	isoPadSectors = 150
)

// countingWriter notes how much was written and the volume size the
// primary volume descriptor (sector 16) declares.
type countingWriter struct {
	w             io.Writer
	n             int64
	volumeSectors int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	if c.n == 16*isoSector && len(p) >= 88 && p[0] == 1 {
		c.volumeSectors = int64(binary.LittleEndian.Uint32(p[80:84]))
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// maxConfigFile bounds each file of a config volume read into memory:
// Kubernetes caps a configMap or secret at 1 MiB.
const maxConfigFile = 1 << 20

// ReadFolder reads the files of a projected volume's folder dir in fsys (a
// secret's, a configMap's): every file i lists below it (links followed
// inside fsys, the kubelet's "..data" bookkeeping left out), by
// slash-separated path, each a regular file of at most 1 MiB. An absent
// dir wraps fs.ErrNotExist.
func ReadFolder(ctx context.Context, i Inspector, fsys FS, dir string) (map[string][]byte, error) {
	names, err := i.Files(ctx, dir)
	if err != nil {
		return nil, err
	}
	return readTree(fsys, dir, names)
}

// readTree reads every file the Inspector lists below dir in fsys into
// memory, each a regular file of at most maxConfigFile bytes.
func readTree(fsys FS, dir string, names []string) (map[string][]byte, error) {
	files := make(map[string][]byte, len(names))
	for _, n := range names {
		b, err := fsys.ReadFile(filepath.Join(dir, filepath.FromSlash(n)), maxConfigFile)
		if err != nil {
			return nil, err
		}
		files[n] = b
	}
	return files, nil
}
