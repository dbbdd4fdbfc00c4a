package importer

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// preallocate allocates every block of f's first size bytes, keeping what
// it holds (fallocate with no flags: holes become allocated zeros).
func preallocate(f *os.File, size int64) error {
	err := syscall.Fallocate(int(f.Fd()), 0, 0, size)
	if errors.Is(err, syscall.EOPNOTSUPP) {
		return fmt.Errorf("preallocating %s: its file system does not allocate ahead (fallocate): %w", f.Name(), err)
	}
	if err != nil {
		return fmt.Errorf("preallocating %s: %w", f.Name(), err)
	}
	return nil
}
