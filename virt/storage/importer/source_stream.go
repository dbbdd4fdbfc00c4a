package importer

import (
	"context"
	"errors"
	"io"
	"sync"
)

// StreamSource is an image arriving as one stream, such as the body of an
// upload. It can be opened once: a second Open fails with ReasonRefused,
// since the bytes already read are gone.
type StreamSource struct {
	// R is the stream.
	R io.Reader
	// Size is its length in bytes, or -1 when unknown.
	Size int64
	// Name names the stream in messages.
	Name string

	once sync.Once
}

// NewStreamSource returns the source of r, of size bytes (-1: unknown).
func NewStreamSource(r io.Reader, size int64, name string) *StreamSource {
	return &StreamSource{R: r, Size: size, Name: name}
}

// String implements Source.
func (s *StreamSource) String() string { return s.Name }

// Open implements Source.
func (s *StreamSource) Open(ctx context.Context) (io.ReadCloser, int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, -1, err
	}
	opened := false
	s.once.Do(func() { opened = true })
	if !opened {
		return nil, -1, fail(ReasonRefused, s.Name, errors.New("a stream can be read only once"))
	}
	return io.NopCloser(s.R), s.Size, nil
}
