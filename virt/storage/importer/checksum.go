package importer

import (
	"context"
	"crypto/md5"  //nolint:gosec // CDI's checksums include md5; it checks integrity, not authenticity.
	"crypto/sha1" //nolint:gosec // as md5.
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"
	"sync"
)

// checksumAlgorithms are those a ChecksumSource verifies, as CDI's
// importer: the algorithm names of "algorithm:hex".
var checksumAlgorithms = map[string]func() hash.Hash{
	"md5": md5.New, "sha1": sha1.New, "sha256": sha256.New, "sha512": sha512.New,
}

// ChecksumSource is a Source whose bytes, as downloaded (compressed, if
// they are), must have a checksum: CDI's checksum of an http source,
// "algorithm:hex" with md5, sha1, sha256 or sha512. A mismatch at the end
// of the stream fails the read with ReasonChecksum, which fails the import
// (its target removed). Verify, after a successful import, confirms the
// whole stream was read and matched.
type ChecksumSource struct {
	src  Source
	algo string
	want []byte
	mu   sync.Mutex
	ok   bool
}

// NewChecksumSource wraps src; spec is "algorithm:hex".
func NewChecksumSource(src Source, spec string) (*ChecksumSource, error) {
	algo, sum, found := strings.Cut(spec, ":")
	if _, known := checksumAlgorithms[algo]; !found || !known {
		return nil, fmt.Errorf("checksum %q: want algorithm:hex with md5, sha1, sha256 or sha512", spec)
	}
	want, err := hex.DecodeString(sum)
	if err != nil || len(want) != checksumAlgorithms[algo]().Size() {
		return nil, fmt.Errorf("checksum %q: not a %s sum in hex", spec, algo)
	}
	return &ChecksumSource{src: src, algo: algo, want: want}, nil
}

// String implements Source.
func (c *ChecksumSource) String() string { return c.src.String() }

// Open implements Source: each opening is checked anew.
func (c *ChecksumSource) Open(ctx context.Context) (io.ReadCloser, int64, error) {
	rc, size, err := c.src.Open(ctx)
	if err != nil {
		return nil, size, err
	}
	c.mu.Lock()
	c.ok = false
	c.mu.Unlock()
	return &checksumReader{rc: rc, h: checksumAlgorithms[c.algo](), c: c}, size, nil
}

// Verify says whether the last opening was read to its end with the
// expected checksum; an importer may stop before the end (a compressed
// stream with trailing bytes), and then nothing was checked.
func (c *ChecksumSource) Verify() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ok {
		return fail(ReasonChecksum, c.String(), errors.New("the source was not read to its end, so its checksum was not verified"))
	}
	return nil
}

type checksumReader struct {
	rc   io.ReadCloser
	h    hash.Hash
	c    *ChecksumSource
	done bool
}

func (r *checksumReader) Read(p []byte) (int, error) {
	n, err := r.rc.Read(p)
	r.h.Write(p[:n])
	if err == io.EOF && !r.done {
		r.done = true
		got := r.h.Sum(nil)
		if string(got) != string(r.c.want) {
			return n, fail(ReasonChecksum, r.c.String(), fmt.Errorf("checksum mismatch: %s %x, want %x", r.c.algo, got, r.c.want))
		}
		r.c.mu.Lock()
		r.c.ok = true
		r.c.mu.Unlock()
	}
	return n, err
}

func (r *checksumReader) Close() error { return r.rc.Close() }
