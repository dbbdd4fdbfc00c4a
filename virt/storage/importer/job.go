package importer

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/go-logr/logr"

	"github.com/virtkit/virtkit/virt/storage"
)

// job is one import under way.
type job struct {
	im   *Importer
	ctx  context.Context
	name string // the source's
	dst  Target
	log  logr.Logger
	cnt  *counter
	comp string // the compression found
}

// run decompresses, detects the format and writes the target. size is the
// source's length, -1 if unknown.
func (j *job) run(size int64) (Result, error) {
	comp, r, stop, err := decompress(j.ctx, bufio.NewReaderSize(j.cnt, headSize), j.im.xzPath())
	defer stop()
	j.comp = comp
	if err != nil {
		return Result{}, j.readError(err)
	}
	hr := bufio.NewReaderSize(r, headSize)
	if j.dst.Archive {
		n, err := j.extract(hr)
		return Result{Format: FormatArchive, Compression: comp, VirtualSize: n}, err
	}
	head, err := hr.Peek(headSize)
	if err != nil && !errors.Is(err, io.EOF) {
		return Result{}, j.readError(err)
	}
	format, info, err := detectFormat(bytes.NewReader(head), int64(len(head)))
	if err != nil {
		return Result{}, j.formatError(err)
	}
	j.log.V(1).Info("detected", "format", format, "compression", comp)
	res := Result{Format: format, Compression: comp}
	switch {
	case format == FormatRaw && comp == CompressionNone && size > j.dst.Size:
		return Result{}, j.tooLarge(size)
	case format == FormatRaw:
		res.VirtualSize, err = j.streamRaw(hr)
	// A qcow2's header says its size: no need to download one that cannot
	// fit.
	case format == FormatQCOW2 && info.VirtualSize > j.dst.Size:
		return Result{}, j.tooLarge(info.VirtualSize)
	default:
		res.VirtualSize, err = j.viaScratch(hr, format)
	}
	return res, err
}

// streamRaw writes a raw image into the target as it arrives.
func (j *job) streamRaw(r io.Reader) (int64, error) {
	out, err := j.dst.open(j.name)
	if err != nil {
		return 0, err
	}
	n, err := writeRaw(out.f, r, j.dst.Size, !j.dst.Block)
	if err != nil {
		out.discard()
		var big errTooLarge
		var werr errWrite
		switch {
		case j.ctx.Err() != nil:
			return 0, j.ended()
		case errors.As(err, &big):
			return 0, fail(ReasonTooLarge, j.name, err)
		case errors.As(err, &werr):
			return 0, fail(ReasonWrite, j.name, fmt.Errorf("%s: %w", j.dst.Path, werr.err))
		}
		return 0, j.readError(err)
	}
	return n, out.finish(j.name)
}

// viaScratch downloads an image into scratch space, checks it, and
// converts it into the target, returning its virtual size.
func (j *job) viaScratch(r io.Reader, format string) (int64, error) {
	if j.dst.NoScratch {
		return 0, fail(ReasonScratchRequired, j.name, fmt.Errorf("a %s image is downloaded to scratch space before it is converted, and there is none", format))
	}
	s, err := newScratch(j.dst.ScratchDir)
	if err != nil {
		return 0, fail(ReasonWrite, j.name, err)
	}
	defer s.remove()
	n, err := s.fill(r, scratchLimit(j.dst.Size))
	if err != nil {
		var werr errWrite
		if errors.As(err, &werr) && j.ctx.Err() == nil {
			return 0, fail(ReasonWrite, j.name, fmt.Errorf("scratch file %s: %w", s.f.Name(), werr.err))
		}
		var big errTooLarge
		if errors.As(err, &big) {
			return 0, fail(ReasonTooLarge, j.name, fmt.Errorf("the %s image file passes %d bytes, more than a disk of %d bytes needs: %w", format, big.size, j.dst.Size, storage.ErrImageTooLarge))
		}
		return 0, j.readError(err)
	}
	j.log.V(1).Info("downloaded", "scratch", s.f.Name(), "bytes", n)
	// What qemu-img will read, checked again as a whole file.
	again, _, err := detectFormat(s.f, n)
	if err != nil {
		return 0, j.formatError(err)
	}
	if again != format {
		return 0, fail(ReasonCorrupt, j.name, fmt.Errorf("the image read as %s while streaming and as %s once downloaded", format, again))
	}
	info, err := j.im.info(j.ctx, s.f, format)
	switch {
	case err != nil:
		return 0, j.qemuImgError(err, ReasonCorrupt)
	case info.VirtualSize > j.dst.Size:
		return 0, j.tooLarge(info.VirtualSize)
	}
	out, err := j.dst.open(j.name)
	if err != nil {
		return 0, err
	}
	if !j.dst.Block {
		// Sparse zeros up to the size, which the image fits in: qemu-img
		// writes into a file as large as it needs, reading as zeros.
		if err := out.f.Truncate(j.dst.Size); err != nil {
			out.discard()
			return 0, fail(ReasonWrite, j.name, err)
		}
	}
	j.log.V(1).Info("converting", "format", format, "virtualSize", info.VirtualSize)
	if err := j.im.convert(j.ctx, s.f, format, out.f, j.dst.Block); err != nil {
		out.discard()
		return 0, j.qemuImgError(err, convertReason(err))
	}
	return info.VirtualSize, out.finish(j.name)
}

// convertReason tells a failed write from an image qemu-img could not
// read, by qemu-img's message.
func convertReason(err error) Reason {
	msg := err.Error()
	if strings.Contains(msg, "error while writing") || strings.Contains(msg, "No space left") {
		return ReasonWrite
	}
	return ReasonCorrupt
}

// qemuImgError classifies an error of running qemu-img: reason unless the
// context ended, qemu-img could not run (not the image's fault) or the
// image refers to other files.
func (j *job) qemuImgError(err error, reason Reason) error {
	switch {
	case j.ctx.Err() != nil:
		return j.ended()
	case errors.Is(err, ErrCannotRun):
		return fmt.Errorf("import from %s: %w", j.name, err)
	case errors.Is(err, storage.ErrUnsafeImage):
		return fail(ReasonUnsupportedFormat, j.name, err)
	}
	return fail(reason, j.name, err)
}

// ended is the error of an import whose context ended.
func (j *job) ended() error { return fmt.Errorf("import from %s: %w", j.name, j.ctx.Err()) }

// readError classifies an error met while reading the image: the
// source's own (unreachable, or the *Error it gave) or the
// decompressor's (corrupt).
func (j *job) readError(err error) error {
	if j.ctx.Err() != nil {
		return j.ended()
	}
	var e *Error
	if src := j.cnt.err; src != nil {
		if errors.As(src, &e) {
			return src
		}
		return fail(ReasonUnreachable, j.name, fmt.Errorf("reading after %d bytes: %w", j.cnt.n, src))
	}
	if errors.As(err, &e) {
		return err
	}
	if j.comp != CompressionNone {
		return fail(ReasonCorrupt, j.name, fmt.Errorf("%s data: %w", j.comp, err))
	}
	return fail(ReasonUnreachable, j.name, err)
}

// formatError classifies an error of detectFormat.
func (j *job) formatError(err error) error {
	if errors.Is(err, storage.ErrUnknownFormat) || errors.Is(err, storage.ErrUnsafeImage) {
		return fail(ReasonUnsupportedFormat, j.name, err)
	}
	return fail(ReasonCorrupt, j.name, fmt.Errorf("image header: %w", err))
}

func (j *job) tooLarge(size int64) error {
	return fail(ReasonTooLarge, j.name, fmt.Errorf("%w: %d bytes, the target holds %d", storage.ErrImageTooLarge, size, j.dst.Size))
}

// openError classifies an error of Source.Open.
func openError(ctx context.Context, name string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("import from %s: %w", name, ctx.Err())
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	return fail(ReasonUnreachable, name, err)
}
