package node

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
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

// dialIn connects to the TCP address addr from inside the network
// namespace file nsPath (the host's when ""). The socket is made on a
// thread switched into the namespace and stays the namespace's; the thread
// goes back, or ends with its goroutine if it cannot.
func dialIn(ctx context.Context, nsPath, addr string) (net.Conn, error) {
	var d net.Dialer
	if nsPath == "" {
		return d.DialContext(ctx, "tcp", addr)
	}
	ns, err := netns.GetFromPath(nsPath)
	if err != nil {
		return nil, fmt.Errorf("network namespace %s: %w", nsPath, err)
	}
	defer ns.Close()
	type result struct {
		conn net.Conn
		err  error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			done <- result{nil, err}
			return
		}
		defer orig.Close()
		if err := netns.Set(ns); err != nil {
			runtime.UnlockOSThread()
			done <- result{nil, fmt.Errorf("entering network namespace %s: %w", nsPath, err)}
			return
		}
		conn, err := d.DialContext(ctx, "tcp", addr)
		if serr := netns.Set(orig); serr != nil {
			if conn != nil {
				conn.Close()
			}
			done <- result{nil, errors.Join(err, serr)}
			return // still locked: the thread ends with this goroutine
		}
		runtime.UnlockOSThread()
		done <- result{conn, err}
	}()
	r := <-done
	return r.conn, r.err
}
