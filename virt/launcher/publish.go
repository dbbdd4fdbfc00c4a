package launcher

import (
	"fmt"
	"os"
	"path/filepath"
)

// publish writes data to path so that a reader sees either no file or the
// whole of it: it is written to a temporary file in the same folder and
// renamed over path. The handler and the pod's readiness probe take the
// ready file's existence as "the URI inside is complete", and a reader that
// caught a half-written file would connect to an empty URI, which libvirt
// takes as the host's own daemon.
func publish(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("publish %s: %w", path, err)
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errorsFirst(werr, cerr, os.Chmod(tmp, 0o644)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("publish %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("publish %s: %w", path, err)
	}
	return nil
}

func errorsFirst(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
