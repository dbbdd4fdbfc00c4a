package kubelet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// hostLock is held by the one real node a host runs at a time: the
// kubelet's device plugin folder, /var/lib/kubelet and the other fixed
// paths are the host's, so two nodes would share them and each would
// restore a host state that includes the other.
const hostLock = "/run/lock/virtkit-kubelet-node.lock"

// lockHost takes hostLock, waiting while another node holds it, until ctx
// ends. The lock ends with the returned file (and with the process).
func lockHost(ctx context.Context, waiting func()) (*os.File, error) {
	f, err := os.OpenFile(hostLock, os.O_CREATE|os.O_RDWR|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("kubelet: host lock: %w", err)
	}
	told := false
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("kubelet: host lock %s: %w", hostLock, err)
		}
		if !told {
			waiting()
			told = true
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("kubelet: waiting for another real node of this host to stop (%s): %w", hostLock, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
