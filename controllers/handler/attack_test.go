package handler_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"gotest.tools/v3/assert"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/launcher"
)

// nodeSocket is a unix socket of the node's own, such as the container
// runtime's, that a pod would like the handler to talk to as root. It
// counts the connections it gets.
func nodeSocket(t *testing.T) (path string, dialed func() int) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "runtime.sock")
	ln, err := net.Listen("unix", path)
	assert.NilError(t, err)
	t.Cleanup(func() { ln.Close() })
	got := make(chan struct{}, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			got <- struct{}{}
			c.Close()
		}
	}()
	return path, func() int {
		time.Sleep(50 * time.Millisecond)
		return len(got)
	}
}

// A pod links its console and VNC sockets to a node socket: the handler
// refuses to follow the links, and the node socket is never reached.
func TestConsoleAndVNCDoNotFollowLinksThePodMade(t *testing.T) {
	n := newFakeNode(t)
	_, l := n.running("vm1")
	sock, dialed := nodeSocket(t)
	assert.NilError(t, os.Symlink(sock, l.SerialSocket()))
	assert.NilError(t, os.Symlink(sock, l.VNCSocket()))
	ctx := context.Background()

	if c, err := n.r.Console(ctx, "default", "vm1"); err == nil {
		c.Close()
		t.Fatal("the console followed a link the pod made")
	}
	if c, err := n.r.VNC(ctx, "default", "vm1"); err == nil {
		c.Close()
		t.Fatal("VNC followed a link the pod made")
	}
	assert.Equal(t, dialed(), 0, "the node's socket was connected to")

	// A regular file where the console socket belongs is no socket either.
	assert.NilError(t, os.Remove(l.SerialSocket()))
	assert.NilError(t, os.WriteFile(l.SerialSocket(), nil, 0o644))
	if c, err := n.r.Console(ctx, "default", "vm1"); err == nil {
		c.Close()
		t.Fatal("the console connected to a regular file")
	}
}

// A pod that links its launcher's libvirt socket to a node socket before
// the handler first connects gets no connection: the VMI is not started.
func TestLibvirtSocketLinkedOutIsNotDialed(t *testing.T) {
	n := newFakeNode(t)
	sock, dialed := nodeSocket(t)
	vmi := scheduledVMI("vm1")
	assert.NilError(t, n.c.Create(context.Background(), vmi))
	assert.NilError(t, n.c.Status().Update(context.Background(), vmi))
	l := n.launcherPod(vmi)
	assert.NilError(t, os.MkdirAll(filepath.Dir(l.LibvirtSocket()), 0o755))
	assert.NilError(t, os.Symlink(sock, l.LibvirtSocket()))
	assert.NilError(t, os.WriteFile(l.ReadyFile(), []byte(l.LibvirtURI()+"\n"), 0o644))

	res := n.reconcile("vm1")
	assert.Assert(t, res.RequeueAfter > 0, "the handler looks again later")
	assert.Equal(t, n.vmi("vm1").Status.Phase, virtv1.Scheduled)
	infos, err := n.dom.List(context.Background())
	assert.NilError(t, err)
	assert.Equal(t, len(infos), 0, "a domain was defined through a planted socket")
	assert.Equal(t, dialed(), 0, "the node's socket was connected to")
}

// A ready file that is a link is not a ready launcher.
func TestReadyFileLinkIsNotReady(t *testing.T) {
	n := newFakeNode(t)
	vmi := scheduledVMI("vm1")
	assert.NilError(t, n.c.Create(context.Background(), vmi))
	assert.NilError(t, n.c.Status().Update(context.Background(), vmi))
	l := n.ready(vmi)
	node := filepath.Join(t.TempDir(), "hostname")
	assert.NilError(t, os.WriteFile(node, []byte("node-a\n"), 0o644))
	assert.NilError(t, os.Remove(l.ReadyFile()))
	assert.NilError(t, os.Symlink(node, l.ReadyFile()))

	res := n.reconcile("vm1")
	assert.Assert(t, res.RequeueAfter > 0, "the handler waits for the launcher")
	assert.Equal(t, n.vmi("vm1").Status.Phase, virtv1.Scheduled)
}

// A launcher's exit file linked to an endless device (or a FIFO nobody
// writes) is never read: the handler does not hang or fill its memory,
// and the VMI is not ended by what the link points at.
func TestExitFileLinkIsNotRead(t *testing.T) {
	for name, plant := range map[string]func(path string) error{
		"link to /dev/zero": func(p string) error { return os.Symlink("/dev/zero", p) },
		"FIFO":              func(p string) error { return unix.Mkfifo(p, 0o644) },
	} {
		t.Run(name, func(t *testing.T) {
			n := newFakeNode(t)
			_, l := n.running("vm1")
			assert.NilError(t, os.Remove(l.ReadyFile()))
			n.stopLibvirt(l)
			assert.NilError(t, plant(l.ExitFile()))
			assert.NilError(t, n.dom.Crash("default_vm1")) // the guest goes with its launcher

			done := make(chan struct{})
			go func() {
				defer close(done)
				n.reconcile("vm1")
			}()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("the handler hung reading the exit file")
			}
			_, ended, err := launcher.ReadResult(l)
			assert.Assert(t, err != nil && !ended, "the planted exit file was read as a result: ended %v, %v", ended, err)
		})
	}
}
