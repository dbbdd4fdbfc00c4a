package importer

import (
	"context"
	"errors"
	"fmt"
)

// Interface is what callers consume: the DataVolume importer daemon, and
// their tests through virt/storage/importer/fake.
type Interface interface {
	// Import writes the image src holds into dst as a raw disk.
	Import(ctx context.Context, src Source, dst Target) (Result, error)
	// Blank makes dst a blank disk of dst.Size: a sparse file of zeros; a
	// block device is only checked to be large enough.
	Blank(ctx context.Context, dst Target) error
}

// Result is what an import found and did.
type Result struct {
	// Format is the image's format as detected from its header: raw,
	// qcow2, vmdk, vdi, vpc (VHD) or vhdx.
	Format string
	// Compression is "", "gzip" or "xz".
	Compression string
	// VirtualSize is the image's virtual size, before the target was
	// extended to Target.Size.
	VirtualSize int64
	// Transferred is the bytes read from the source (compressed).
	Transferred int64
}

// Importer is the real Interface: it reads sources, writes files and
// devices, and runs qemu-img. It keeps no state between calls: one
// Importer may run several imports at once.
type Importer struct {
	o options
}

var _ Interface = (*Importer)(nil)

// New returns an Importer.
func New(opts ...Option) *Importer { return &Importer{o: newOptions(opts)} }

// Import reads src and writes the image into dst. It fails with an *Error,
// or with the context's error when ctx ends.
func (im *Importer) Import(ctx context.Context, src Source, dst Target) (Result, error) {
	name := src.String()
	log := im.o.log.WithValues("source", name, "target", dst.Path)
	dst, err := dst.check(name)
	if err != nil {
		return Result{}, err
	}
	rc, size, err := src.Open(ctx)
	if err != nil {
		return Result{}, openError(ctx, name, err)
	}
	defer rc.Close()
	log.V(1).Info("importing", "size", size)
	j := &job{im: im, ctx: ctx, name: name, dst: dst, log: log, cnt: newCounter(ctx, rc, size, im.o.progress)}
	res, err := j.run(size)
	if err != nil {
		log.V(1).Info("import failed", "error", err.Error())
		return Result{}, err
	}
	res.Transferred = j.cnt.n
	j.cnt.end()
	log.Info("imported", "format", res.Format, "compression", res.Compression, "virtualSize", res.VirtualSize, "transferred", res.Transferred)
	return res, nil
}

// Blank makes dst a blank disk.
func (im *Importer) Blank(ctx context.Context, dst Target) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("blank disk %s: %w", dst.Path, err)
	}
	if dst.Archive {
		return fail(ReasonWrite, "", errors.New("a blank disk is not an archive"))
	}
	dst, err := dst.check("")
	if err != nil {
		return err
	}
	if dst.Block {
		return nil
	}
	out, err := dst.open("")
	if err != nil {
		return err
	}
	if err := out.finish(""); err != nil {
		return err
	}
	im.o.log.Info("blank disk", "target", dst.Path, "size", dst.Size)
	return nil
}
