package importer

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/virtkit/virtkit/virt/storage"
)

const (
	// sparseBlock is the granularity of holes in a file target: an
	// all-zero block of this size is skipped, not written.
	sparseBlock = 64 << 10
	// chunk is how much is read at a time.
	chunk = 16 * sparseBlock
)

// errTooLarge is a raw image passing its target's size.
type errTooLarge struct{ size int64 }

func (e errTooLarge) Error() string {
	return fmt.Sprintf("the raw image holds more than the target's %d bytes", e.size)
}

func (e errTooLarge) Unwrap() error { return storage.ErrImageTooLarge }

// errWrite marks an error of the target, not of the reader.
type errWrite struct{ err error }

func (e errWrite) Error() string { return e.err.Error() }
func (e errWrite) Unwrap() error { return e.err }

// writeRaw copies r to f from offset 0 and returns the bytes read. Sparse,
// all-zero blocks are skipped: f must read as zeros where nothing is
// written (a new file). Nothing is written at or past limit: an r that
// holds more fails with errTooLarge. Errors of f are errWrite; others are
// r's.
func writeRaw(f *os.File, r io.Reader, limit int64, sparse bool) (int64, error) {
	buf := make([]byte, chunk)
	zero := make([]byte, sparseBlock)
	var off int64
	for {
		n, err := fill(r, buf)
		if n > 0 {
			if off+int64(n) > limit {
				return off, errTooLarge{limit}
			}
			if werr := writeChunk(f, buf[:n], off, sparse, zero); werr != nil {
				return off, errWrite{werr}
			}
			off += int64(n)
		}
		if errors.Is(err, io.EOF) {
			return off, nil
		}
		if err != nil {
			return off, err
		}
	}
}

// fill reads into buf until it is full or r fails; unlike io.ReadFull it
// tells r's own io.ErrUnexpectedEOF (a truncated stream) from an end.
func fill(r io.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// writeChunk writes b at off, leaving out all-zero blocks when sparse and
// writing each run of other blocks at once.
func writeChunk(f *os.File, b []byte, off int64, sparse bool, zero []byte) error {
	if !sparse {
		_, err := f.WriteAt(b, off)
		return err
	}
	start := -1 // the first block of the run being gathered
	for i := 0; i < len(b); i += sparseBlock {
		end := min(i+sparseBlock, len(b))
		if bytes.Equal(b[i:end], zero[:end-i]) {
			if start >= 0 {
				if _, err := f.WriteAt(b[start:i], off+int64(start)); err != nil {
					return err
				}
				start = -1
			}
			continue
		}
		if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		_, err := f.WriteAt(b[start:], off+int64(start))
		return err
	}
	return nil
}
