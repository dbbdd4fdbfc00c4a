package importer_test

import (
	"os"
	"syscall"
	"testing"
)

// allocated is the space the file at path takes on disk.
func allocated(t *testing.T, path string) (int64, bool) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return st.Blocks * 512, true
}
