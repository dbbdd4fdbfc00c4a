package node

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/launcher/contract"
)

// warmLogLimit bounds what of the probe's output an error quotes.
const warmLogLimit = 4 << 10

// WarmCapabilities fills cacheDir, the QEMU capability cache the launchers
// of local nodes share, before the first launcher needs it: the launcher
// binary's host CPU probe (launcher, a host path) run as a local node runs
// a launcher's container (the qemu user and group with no way to gain
// privileges, the node's accounts plus theirs in its own mount view, the
// host's network, binDirs first on PATH), with cacheDir as its cache where
// launcher pods see it (contract.CapabilitiesCachePath), so
// that what it caches is what those launchers' libvirtd looks for. Without
// it every launcher that starts before the first probe is written probes
// QEMU itself: a few seconds of both cores each when many start at once.
// The probe's own result is thrown away. ctx bounds it; the probe is killed
// when ctx ends.
func WarmCapabilities(ctx context.Context, runner ProcessRunner, launcher, cacheDir string, binDirs []string) (err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("node: warming the capability cache %s: %w", cacheDir, err)
		}
	}()
	scratch, err := os.MkdirTemp("", "vkl-warm-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	out, err := os.MkdirTemp("", "vkl-caps-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(out)
	if err := os.Lchown(out, contract.QEMUUser, contract.QEMUGroup); err != nil {
		return err
	}
	id := &Identity{UID: contract.QEMUUser, GID: contract.QEMUGroup, Groups: []uint32{contract.QEMUGroup}, NoNewPrivs: true}
	mounts, err := accountMounts(id, nodePasswd, nodeGroup, scratch)
	if err != nil {
		return err
	}
	// Where launcher pods see it; the qemu user may not reach it on the host.
	mounts = append(mounts, Mount{Source: cacheDir, Target: contract.CapabilitiesCachePath})
	logPath := filepath.Join(scratch, "log")
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer log.Close()
	p, err := runner.Start(ctx, ProcessSpec{
		Path: launcher,
		Args: []string{launcher, "--" + contract.FlagProbeHostCPU, out, "--" + contract.FlagVirtType, contract.VirtTypeQEMU,
			"--" + contract.FlagLibvirtCacheDir, contract.CapabilitiesCachePath},
		Env:    containerEnv(&corev1.Container{}, "capability-probe", binDirs, nil),
		Mounts: mounts, Scratch: scratch, Log: log, User: id,
	})
	if err != nil {
		return err
	}
	ended := make(chan ExitStatus, 1)
	go func() { ended <- p.Wait() }()
	var st ExitStatus
	select {
	case st = <-ended:
	case <-ctx.Done():
		_ = runner.Kill(context.WithoutCancel(ctx), p.Ref())
		<-ended
		return ctx.Err()
	}
	if st.Code != 0 {
		return fmt.Errorf("the probe ended with code %d: %s", st.Code, tail(logPath, warmLogLimit))
	}
	return nil
}

// tail is the last limit bytes of the file at path, trimmed; what cannot be
// read is left out.
func tail(path string, limit int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > limit {
		_, _ = f.Seek(-limit, io.SeekEnd)
	}
	b, _ := io.ReadAll(io.LimitReader(f, limit))
	return string(bytes.TrimSpace(b))
}
