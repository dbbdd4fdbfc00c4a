package node

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/virtkit/virtkit/internal/linuxproc"
)

// sharePodsDir makes dir (the node's pods folder) a shared mount, as the
// kubelet makes its root folder: a HostToContainer volume of a pod is a
// slave of it, so that what a node daemon mounts below dir later (a
// hotplugged disk bound into a launcher's hotplug folder) appears in the
// pod. A folder that is not a shared mount point is bound onto itself
// (with its submounts) and made shared, and the file marker records that
// the node made it; undo unmounts that bind and removes marker. A shared
// mount point the node did not make (no marker) is left as it is; one it
// made before it crashed is taken over.
func sharePodsDir(dir, marker string) (undo func() error, err error) {
	dir, err = filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, fmt.Errorf("node: pods folder: %w", err)
	}
	undo = func() error {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("node: unmounting the pods folder %s: %w", dir, err)
		}
		if err := os.Remove(marker); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("node: %w", err)
		}
		return nil
	}
	mounts, err := linuxproc.ReadMounts("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("node: pods folder: %w", err)
	}
	_, mine := os.Stat(marker)
	for _, m := range mounts {
		if m.MountPoint == dir && m.Shared {
			if mine == nil {
				return undo, nil
			}
			return func() error { return nil }, nil
		}
	}
	if err := os.WriteFile(marker, []byte(dir+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	if err := unix.Mount(dir, dir, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return nil, errors.Join(fmt.Errorf("node: binding the pods folder %s onto itself: %w", dir, err), os.Remove(marker))
	}
	if err := unix.Mount("", dir, "", unix.MS_SHARED|unix.MS_REC, ""); err != nil {
		return nil, errors.Join(fmt.Errorf("node: sharing the pods folder %s: %w", dir, err), undo())
	}
	return undo, nil
}
