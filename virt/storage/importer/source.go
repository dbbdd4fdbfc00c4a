package importer

import (
	"context"
	"io"
)

// Source is where an image's bytes come from.
//
// An error of Open or of the reader that is not an *Error counts as
// ReasonUnreachable (retryable); a Source returns an *Error to say
// otherwise (HTTPSource does for a refused request).
type Source interface {
	// Open starts reading the image from its beginning. size is the
	// length in bytes if known, else -1.
	Open(ctx context.Context) (rc io.ReadCloser, size int64, err error)
	// String names the source for messages (a URL without credentials).
	String() string
}
