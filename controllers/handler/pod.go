package handler

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/virtkit/virtkit/virt/launcher/contract"
	"github.com/virtkit/virtkit/virt/network"
	"github.com/virtkit/virtkit/virt/network/netns"
)

// Pod is the node's way into one launcher pod: its network namespace and
// its file system, found from the pod's libvirtd.
type Pod struct {
	// PID is the node's PID of the pod's libvirtd.
	PID int
	// Network sets up the guest's NICs in the pod's network namespace.
	Network network.Configurator
	// Root is a path under which the pod's file system appears from the
	// node (opened with virt/confined for storage.WithFS); "" is the node's
	// own root.
	Root string
	// Close releases the handles; what was set up in the pod stays.
	Close func() error
}

// PodOpener finds the launcher pod whose libvirtd listens on socket (the
// node's path of the launcher's libvirt socket).
type PodOpener func(ctx context.Context, socket string) (*Pod, error)

// OpenPod is the real PodOpener. The peer of a connection to the libvirt
// socket is the pod's libvirtd, so the socket's peer credentials
// (SO_PEERCRED) give its PID on the node; /proc/PID/ns/net is the pod's
// network namespace and /proc/PID/root its file system. Both are opened as
// handles at once (the root as /proc/self/fd/N), so they keep pointing at the
// pod even after its processes ended or their PIDs were reused, until Close.
func OpenPod(ctx context.Context, socket string) (*Pod, error) {
	pid, err := PeerPID(ctx, socket)
	if err != nil {
		return nil, err
	}
	// The taps are the qemu user's: a launcher that is not root (a session
	// libvirtd, QEMU as that user) opens them with no capability.
	ns, err := netns.Open("/proc/"+strconv.Itoa(pid)+"/ns/net", netns.WithTapOwner(contract.QEMUUser, contract.QEMUGroup))
	if err != nil {
		return nil, fmt.Errorf("handler: launcher pod of %s (libvirtd PID %d): %w", socket, pid, err)
	}
	root := "/proc/" + strconv.Itoa(pid) + "/root"
	fd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		ns.Close()
		return nil, fmt.Errorf("handler: launcher pod of %s: open %s: %w", socket, root, err)
	}
	p := &Pod{
		PID:     pid,
		Network: ns,
		Root:    "/proc/self/fd/" + strconv.Itoa(fd),
		Close: func() error {
			return errors.Join(ns.Close(), unix.Close(fd))
		},
	}
	// The PID could have been reused between reading it and opening its
	// namespaces: check that the socket's peer is still the same process.
	if again, err := PeerPID(ctx, socket); err != nil || again != pid {
		_ = p.Close()
		return nil, fmt.Errorf("handler: launcher pod of %s: libvirtd PID changed from %d to %d while opening its namespaces: %w", socket, pid, again, errors.Join(err, errPodChanged))
	}
	return p, nil
}

var errPodChanged = errors.New("launcher pod changed")

// PeerPID connects to the unix socket and returns the PID, in this
// process's PID namespace, of the process that listens on it.
func PeerPID(ctx context.Context, socket string) (int, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return 0, fmt.Errorf("handler: connect to %s: %w", socket, err)
	}
	defer c.Close()
	raw, err := c.(*net.UnixConn).SyscallConn()
	if err != nil {
		return 0, fmt.Errorf("handler: %s: %w", socket, err)
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, fmt.Errorf("handler: %s: %w", socket, err)
	}
	if credErr != nil {
		return 0, fmt.Errorf("handler: peer credentials of %s: %w", socket, credErr)
	}
	if cred.Pid <= 0 {
		return 0, fmt.Errorf("handler: peer of %s is in another PID namespace (PID %d)", socket, cred.Pid)
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(int(cred.Pid))); err != nil {
		return 0, fmt.Errorf("handler: peer of %s: %w", socket, err)
	}
	return int(cred.Pid), nil
}
