package netns

import (
	"os"
	"sync/atomic"

	"github.com/go-logr/logr"
	"golang.org/x/sys/unix"
)

// receiveFrames reads frames from the packet socket f and hands each to
// handle, skipping the frames the socket itself sent, until reading fails.
// It returns that failure, or nil when stopping says the socket was closed
// on purpose. A failed single receive is logged and skipped.
func receiveFrames(f *os.File, stopping *atomic.Bool, log logr.Logger, handle func(frame []byte)) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	buf := make([]byte, 1600)
	for {
		var n int
		var from unix.Sockaddr
		var rerr error
		err := rc.Read(func(fd uintptr) bool {
			n, from, rerr = unix.Recvfrom(int(fd), buf, 0)
			return rerr != unix.EAGAIN
		})
		if err != nil {
			if stopping.Load() {
				return nil
			}
			return err
		}
		if rerr != nil {
			log.V(1).Info("packet receive failed", "error", rerr.Error())
			continue
		}
		if ll, ok := from.(*unix.SockaddrLinklayer); ok && ll.Pkttype == unix.PACKET_OUTGOING {
			continue // our own frame, seen on the way out
		}
		handle(buf[:n])
	}
}

// sendFrame writes one frame through the packet socket f to the link-layer
// address to.
func sendFrame(f *os.File, frame []byte, to *unix.SockaddrLinklayer) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Write(func(fd uintptr) bool {
		serr = unix.Sendto(int(fd), frame, 0, to)
		return serr != unix.EAGAIN
	}); err != nil {
		return err
	}
	return serr
}
