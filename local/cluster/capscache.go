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

// warmCapabilitiesCache fills cacheDir, the QEMU capability cache the
// launchers of process nodes share, before the first launcher needs it:
// virt-launcher's host CPU probe (in binDir) run through runner as a local
// node runs a launcher pod's container (capabilityProbe), its own result
// thrown away. Without it every launcher that starts before the first
// probe is written probes QEMU itself: a few seconds of both cores each
// when many start at once.
func warmCapabilitiesCache(ctx context.Context, runner node.ProcessRunner, binDir, cacheDir string) error {
	out, err := os.MkdirTemp("", "vkl-caps-")
	if err != nil {
		return fmt.Errorf("cluster: warming the capability cache: %w", err)
	}
	defer os.RemoveAll(out)
	if err := os.Lchown(out, contract.QEMUUser, contract.QEMUGroup); err != nil {
		return fmt.Errorf("cluster: warming the capability cache: %w", err)
	}
	if err := node.RunOneOff(ctx, runner, capabilityProbe(binDir, cacheDir, out)); err != nil {
		return fmt.Errorf("cluster: warming the capability cache %s: %w", cacheDir, err)
	}
	return nil
}

// capabilityProbe is the probe warmCapabilitiesCache runs: virt-launcher's
// host CPU probe (--probe-host-cpu into out, for software emulation) as the
// launcher pods' compute container runs, the qemu user and group with no
// way to gain privileges, with cacheDir as its cache where those pods see
// it (contract.CapabilitiesCachePath). The launcher, not root, then runs a
// session libvirtd as theirs does, so that what it caches is what their
// libvirtd looks for.
func capabilityProbe(binDir, cacheDir, out string) node.OneOff {
	return node.OneOff{
		Path: filepath.Join(binDir, contract.Binary),
		Args: []string{"--" + contract.FlagProbeHostCPU, out, "--" + contract.FlagVirtType, contract.VirtTypeQEMU,
			"--" + contract.FlagLibvirtCacheDir, contract.CapabilitiesCachePath},
		User:    &node.Identity{UID: contract.QEMUUser, GID: contract.QEMUGroup, Groups: []uint32{contract.QEMUGroup}, NoNewPrivs: true},
		Mounts:  []node.Mount{{Source: cacheDir, Target: contract.CapabilitiesCachePath}},
		BinDirs: []string{binDir},
	}
}

// warmTimeout bounds the warming of the capability cache: a libvirtd's
// start and QEMU's capability probe, about 2 s under emulation here.
const warmTimeout = 2 * time.Minute

// warmCapabilities fills the cache the process nodes' launchers share
// (warmCapabilitiesCache, on a runner of its own) in the background. It
// returns a function that waits for that, stopping it first when abandon
// is set; the first call waits, later ones return at once. A cache that
// could not be warmed is logged and left to the first launchers to fill,
// as before.
func (c *Cluster) warmCapabilities(ctx context.Context) (wait func(abandon bool)) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	began := time.Now()
	go func() {
		ctx, cancel := context.WithTimeout(ctx, warmTimeout)
		defer cancel()
		runner := node.NewHostRunner()
		defer runner.Close()
		done <- warmCapabilitiesCache(ctx, runner, c.cfg.BinDir, c.cfg.CapabilitiesCacheDir())
	}()
	var once sync.Once
	return func(abandon bool) {
		once.Do(func() { c.waitWarm(done, cancel, abandon, began) })
	}
}

// waitWarm waits for the warming's result (done) and logs it.
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
