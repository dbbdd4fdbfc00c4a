package importer

import (
	"errors"
	"strings"

	"github.com/virtkit/virtkit/virt/storage/importer/contract"
)

// Reason says why an import failed, in a word a controller can put into a
// DataVolume condition or event.
type Reason string

const (
	// ReasonUnreachable: the source could not be reached or stopped
	// sending (a connection refused or reset, a timeout, an HTTP 5xx, 408 or
	// 429). Retryable.
	ReasonUnreachable Reason = "Unreachable"
	// ReasonRefused: the source was reached but will not give the image as
	// specified: an invalid URL, an HTTP status retrying does not change
	// (401, 403, 404...), a TLS certificate the CA bundle does not trust.
	ReasonRefused Reason = "SourceRefused"
	// ReasonUnsupportedFormat: the image is in a format the importer does
	// not convert, or refers to other files (wrapping
	// storage.ErrUnknownFormat or storage.ErrUnsafeImage).
	ReasonUnsupportedFormat Reason = "UnsupportedFormat"
	// ReasonCorrupt: the compressed data or the image cannot be read.
	ReasonCorrupt Reason = "Corrupt"
	// ReasonTooLarge: the image's virtual size exceeds the target's size
	// (wrapping storage.ErrImageTooLarge).
	ReasonTooLarge Reason = "TooLarge"
	// ReasonWrite: the target or scratch space could not be opened or
	// written (a symbolic link, no space left, a device too small).
	ReasonWrite Reason = "WriteFailed"
	// ReasonChecksum: the bytes downloaded do not have the checksum the
	// source was given (ChecksumSource), or were not all read to check it.
	ReasonChecksum Reason = "ChecksumError"
	// ReasonScratchRequired: the image must be downloaded before it is
	// converted and the Target has NoScratch. Not a failure of the
	// source: import again with scratch space.
	ReasonScratchRequired Reason = contract.ReasonScratchRequired
)

// words is the reason in plain words, for messages.
func (r Reason) words() string {
	switch r {
	case ReasonUnreachable:
		return "source unreachable"
	case ReasonRefused:
		return "source refused the image"
	case ReasonUnsupportedFormat:
		return "unsupported image"
	case ReasonCorrupt:
		return "corrupt image"
	case ReasonTooLarge:
		return "image too large for its target"
	case ReasonWrite:
		return "writing the target failed"
	case ReasonChecksum:
		return "checksum mismatch"
	case ReasonScratchRequired:
		return "scratch space required"
	}
	return string(r)
}

// Error is a failed import: why, from which source, and the underlying
// error.
type Error struct {
	Reason Reason
	// Source names the source (its String(), without credentials).
	Source string
	Err    error
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Source != "" {
		b.WriteString("import from " + e.Source + ": ")
	}
	b.WriteString(e.Reason.words())
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// IsRetryable reports whether err is an *Error another attempt may mend:
// a source that could not be reached.
func IsRetryable(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Reason == ReasonUnreachable
}

// ReasonOf is the Reason of the *Error in err's chain, or "" if none.
func ReasonOf(err error) Reason {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ""
}

// fail makes an *Error.
func fail(r Reason, src string, err error) *Error { return &Error{Reason: r, Source: src, Err: err} }
