package node

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"strconv"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// createNetNS creates a network namespace and keeps it alive by
// bind-mounting it on the file path (in the node's mount namespace).
func createNetNS(path string) (err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDONLY, 0o444)
	if err != nil {
		return fmt.Errorf("network namespace %s: %w", path, err)
	}
	f.Close()
	defer func() {
		if err != nil {
			_ = os.Remove(path)
		}
	}()

	errc := make(chan error, 1)
	go func() {
		// unshare moves this thread into the new namespace; the thread goes
		// back, or dies with the goroutine if it cannot.
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			errc <- err
			return
		}
		defer orig.Close()
		ns, err := netns.New()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer ns.Close()
		src := "/proc/self/task/" + strconv.Itoa(unix.Gettid()) + "/ns/net"
		err = unix.Mount(src, path, "none", unix.MS_BIND, "")
		if serr := netns.Set(orig); serr == nil {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	if err := <-errc; err != nil {
		return fmt.Errorf("network namespace %s: %w", path, err)
	}
	return nil
}

// removeNetNS unmounts and removes a namespace file; a missing one is no error.
func removeNetNS(path string) error {
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("network namespace %s: unmount: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("network namespace %s: %w", path, err)
	}
	return nil
}
