package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/virtkit/virtkit/virt/launcher/contract"
)

// prepareCapabilitiesCache makes dir, the QEMU capability cache the
// cluster's launchers share, the qemu user's, mode 0770: launchers run as
// that user, and their libvirtd writes its probe's result there. A cache
// of another owner (left by launchers that ran as root) is emptied first:
// its files are that owner's, and a probe rebuilds it. dir is never
// followed if it is a link.
func prepareCapabilitiesCache(dir string) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("cluster: capability cache: %w", err)
	}
	fi, err := os.Lstat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return fmt.Errorf("cluster: capability cache: %w", err)
	case !fi.IsDir():
		return fmt.Errorf("cluster: capability cache %s: not a folder", dir)
	default:
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid == contract.QEMUUser && st.Gid == contract.QEMUGroup {
			return os.Chmod(dir, 0o770)
		}
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("cluster: capability cache: %w", err)
		}
	}
	if err := os.Mkdir(dir, 0o770); err != nil {
		return fmt.Errorf("cluster: capability cache: %w", err)
	}
	if err := os.Lchown(dir, contract.QEMUUser, contract.QEMUGroup); err != nil {
		return fmt.Errorf("cluster: capability cache: %w", err)
	}
	return os.Chmod(dir, 0o770)
}
