package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/virtkit/virtkit/local/node"
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

// warmTimeout bounds the warming of the capability cache: a libvirtd's
// start and QEMU's capability probe, about 2 s under emulation here.
const warmTimeout = 2 * time.Minute

// warmCapabilities fills the cache the process nodes' launchers share
// (node.WarmCapabilities, on a runner of its own) in the background and returns a function that waits for it, stopping it first
// when abandon is set (the first call waits, later ones return at once). A
// cache that could not be warmed is logged and left to the first launchers
// to fill, as before.
func (c *Cluster) warmCapabilities(ctx context.Context) (wait func(abandon bool)) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	began := time.Now()
	go func() {
		ctx, cancel := context.WithTimeout(ctx, warmTimeout)
		defer cancel()
		runner := node.NewHostRunner()
		defer runner.Close()
		done <- node.WarmCapabilities(ctx, runner, filepath.Join(c.cfg.BinDir, "virt-launcher"), c.cfg.CapabilitiesCacheDir(), []string{c.cfg.BinDir})
	}()
	var once sync.Once
	return func(abandon bool) {
		once.Do(func() { c.waitWarm(done, cancel, abandon, began) })
	}
}

func (c *Cluster) waitWarm(done <-chan error, cancel context.CancelFunc, abandon bool, began time.Time) {
	if abandon {
		cancel()
	}
	err := <-done
	cancel()
	switch {
	case abandon:
	case err != nil:
		c.cfg.Logger.Info("the launchers' capability cache was not warmed: the first launchers probe QEMU themselves", "error", err.Error())
	default:
		c.cfg.Logger.V(1).Info("the launchers' capability cache is warm", "took", time.Since(began).Round(time.Millisecond).String())
	}
}
