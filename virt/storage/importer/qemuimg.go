package importer

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/virtkit/virtkit/virt/storage"
)

// qemuInfo is what the importer reads of `qemu-img info --output=json`.
type qemuInfo struct {
	VirtualSize         int64  `json:"virtual-size"`
	Format              string `json:"format"`
	BackingFilename     string `json:"backing-filename"`
	FullBackingFilename string `json:"full-backing-filename"`
	FormatSpecific      struct {
		Data struct {
			DataFile string `json:"data-file"`
			Extents  []struct {
				Filename string `json:"filename"`
			} `json:"extents"`
		} `json:"data"`
	} `json:"format-specific"`
}

// info runs qemu-img info on the image f holds, read as format (never
// probed), and refuses an image that refers to other files.
func (im *Importer) info(ctx context.Context, f *os.File, format string) (qemuInfo, error) {
	out, err := im.o.runner.Run(ctx, Command{
		Path:   im.o.qemuImg,
		Args:   []string{"info", "--output=json", "-f", format, FilePath(0)},
		Files:  []*os.File{f},
		Limits: &InfoLimits,
	})
	if err != nil {
		return qemuInfo{}, err
	}
	var info qemuInfo
	if err := json.Unmarshal(out, &info); err != nil {
		return qemuInfo{}, fmt.Errorf("qemu-img info: %w", err)
	}
	if info.Format != format {
		return info, fmt.Errorf("qemu-img info read the image as %q, not %q", info.Format, format)
	}
	if info.VirtualSize < 0 {
		return info, fmt.Errorf("qemu-img info: virtual size %d", info.VirtualSize)
	}
	var refs []string
	for _, name := range []string{info.BackingFilename, info.FullBackingFilename, info.FormatSpecific.Data.DataFile} {
		if name != "" {
			refs = append(refs, name)
		}
	}
	for _, e := range info.FormatSpecific.Data.Extents {
		if e.Filename != FilePath(0) {
			refs = append(refs, e.Filename)
		}
	}
	if len(refs) > 0 {
		return info, fmt.Errorf("%w: the %s image refers to %s; an imported image may not refer to other files", storage.ErrUnsafeImage, format, strings.Join(refs, ", "))
	}
	return info, nil
}

// convert runs qemu-img convert from the image in src, read as format, to
// raw in dst, which is open and at least as large as the image. block
// says dst is a device: its zeros must be written, where a new file reads
// as zeros already.
func (im *Importer) convert(ctx context.Context, src *os.File, format string, dst *os.File, block bool) error {
	args := []string{"convert", "-t", "writeback", "-f", format, "-O", "raw", "-n"}
	if !block {
		args = append(args, "--target-is-zero")
	}
	args = append(args, FilePath(0), FilePath(1))
	_, err := im.o.runner.Run(ctx, Command{Path: im.o.qemuImg, Args: args, Files: []*os.File{src, dst}})
	return err
}
