//go:build !linux

package importer

import (
	"errors"
	"os"
)

// preallocate needs Linux's fallocate: elsewhere it fails.
func preallocate(f *os.File, _ int64) error {
	return errors.New("preallocating " + f.Name() + ": only on Linux")
}
