package importer

import (
	"context"
	"errors"
	"io"
)

// Progress is called as bytes arrive from the source: done bytes of total
// (-1 when the source does not say). It is called about every 1% (every
// 16 MiB when total is unknown) and once at the end of a successful
// import with done equal to Result.Transferred. It runs on the importing
// goroutine: it must return quickly.
type Progress func(done, total int64)

// unknownTotalStep is how often Progress is called when the total is
// unknown.
const unknownTotalStep = 16 << 20

// counter reads the source: it counts, reports progress, stops when the
// context ends, and keeps the source's own error apart from the errors of
// the decompressor reading it.
type counter struct {
	ctx      context.Context
	r        io.Reader
	n, total int64
	progress Progress
	step     int64
	next     int64
	// err is the source's error (not io.EOF).
	err error
}

func newCounter(ctx context.Context, r io.Reader, total int64, p Progress) *counter {
	step := int64(unknownTotalStep)
	if total > 0 {
		step = max(total/100, 1)
	}
	return &counter{ctx: ctx, r: r, total: total, progress: p, step: step, next: step}
}

func (c *counter) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	if err != nil && !errors.Is(err, io.EOF) {
		c.err = err
	}
	if c.progress != nil && c.n >= c.next {
		c.progress(c.n, c.total)
		c.next = c.n + c.step
	}
	return n, err
}

// end reports the final count.
func (c *counter) end() {
	if c.progress != nil {
		c.progress(c.n, c.total)
	}
}
