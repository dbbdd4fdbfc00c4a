package handler

import (
	"bufio"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/virt"
	"github.com/virtkit/virtkit/virt/launcher"
	"github.com/virtkit/virtkit/virt/launcher/contract"
)

// The proxy forwards each channel's connections from the source folder to
// the target launcher's sockets in its own folder, both ways with half
// closes, and Close ends them and removes its sockets.
func TestMigrationProxy(t *testing.T) {
	run := testenv.Dir(t) // short: the target's sockets are dialled by path here
	const mig, vmi, pod = "0d0d0d0d-0000-4000-8000-00000000000a", "0e0e0e0e-0000-4000-8000-00000000000b", "p1"
	src := launcher.Layout{Root: filepath.Join(run, vmi)}
	// The target pod's folder, on node b, whose pods folder is run/b.
	dst := launcher.Layout{Root: contract.PodFolder(filepath.Join(run, "b"), pod)}
	assert.NilError(t, os.Mkdir(src.Root, 0o755)) // the running source launcher's
	fakeTargetLauncher(t, dst)
	var dialErrs []error
	p, err := startProxy(openFolder(t, src), MigrationTarget{Migration: mig, VMI: vmi, Pod: pod, Node: "b"}, LocalMigrationDialer{PodsDirs: map[string]string{"b": filepath.Join(run, "b")}},
		func(err error) { dialErrs = append(dialErrs, err) })
	assert.NilError(t, err)
	roundTrip(t, src)

	// A connection open at Close is ended.
	open, err := net.Dial("unix", MigrationSocket(src, ChannelMemory))
	assert.NilError(t, err)
	time.Sleep(100 * time.Millisecond) // accepted and dialled through
	assert.NilError(t, p.Close())
	_ = open.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = open.Read(make([]byte, 1))
	assert.Assert(t, err == io.EOF || strings.Contains(err.Error(), "reset"), "read after Close: %v", err)
	for _, ch := range MigrationChannels {
		_, err := os.Stat(MigrationSocket(src, ch))
		assert.Assert(t, os.IsNotExist(err), "socket of %s left: %v", ch, err)
	}
	assert.Equal(t, len(dialErrs), 0, "%v", dialErrs)
}

// A target that is not there: the source's connection is closed and the
// error reported, naming the migration and the channel.
func TestMigrationProxyNoTarget(t *testing.T) {
	run := t.TempDir()
	src := launcher.Layout{Root: filepath.Join(run, "src")}
	assert.NilError(t, os.Mkdir(src.Root, 0o755))
	errs := make(chan error, 1)
	p, err := startProxy(openFolder(t, src), MigrationTarget{Migration: "gone", Pod: "p-gone", Node: "b"}, LocalMigrationDialer{PodsDirs: map[string]string{"b": run}},
		func(err error) { errs <- err })
	assert.NilError(t, err)
	defer p.Close()
	c, err := net.Dial("unix", MigrationSocket(src, ChannelLibvirt))
	assert.NilError(t, err)
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = c.Read(make([]byte, 1))
	assert.Equal(t, err, io.EOF)
	select {
	case err := <-errs:
		assert.ErrorContains(t, err, "handler: migration gone: libvirt channel of the target launcher on node b")
	case <-time.After(5 * time.Second):
		t.Fatal("no error reported")
	}
	// The first failure is kept: the migration's failure reason says it.
	assert.ErrorContains(t, p.err(), "handler: migration gone: libvirt channel of the target launcher on node b")
}

// A target's chain prepares as a start does but runs neither define nor
// start; their undo stays.
func TestIncomingSteps(t *testing.T) {
	steps, err := incomingSteps(virt.DefaultSteps())
	assert.NilError(t, err)
	assert.Equal(t, len(steps), len(virt.DefaultSteps()))
	for _, s := range steps {
		if s.Name != virt.StepDefine && s.Name != virt.StepStart {
			continue
		}
		assert.NilError(t, s.Run(context.Background(), nil), "step %s runs nothing", s.Name)
		assert.Assert(t, s.Undo != nil, "step %s keeps its undo", s.Name)
	}
}

// fakeTargetLauncher listens on the target launcher's sockets in dst: its
// libvirt socket and the sockets its QEMU and NBD server listen on, each
// answering with its name and what it read until the half close.
func fakeTargetLauncher(t *testing.T, dst launcher.Layout) {
	t.Helper()
	for _, ch := range MigrationChannels {
		path := MigrationSocket(dst, ch)
		if ch == ChannelLibvirt {
			path = dst.LibvirtSocket()
		}
		assert.NilError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		ln, err := net.Listen("unix", path)
		assert.NilError(t, err)
		testenv.Serve(t, ln, func(c net.Conn) {
			b, _ := io.ReadAll(c) // until the source's half close
			_, _ = io.WriteString(c, string(ch)+" got "+string(b)+"\n")
		})
	}
}

// roundTrip sends a line through each channel's socket of the source
// folder src and checks the fake target launcher's answer.
func roundTrip(t *testing.T, src launcher.Layout) {
	t.Helper()
	for _, ch := range MigrationChannels {
		c, err := net.Dial("unix", MigrationSocket(src, ch))
		assert.NilError(t, err, "channel %s", ch)
		_, err = io.WriteString(c, "hello "+string(ch))
		assert.NilError(t, err)
		assert.NilError(t, c.(*net.UnixConn).CloseWrite())
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		line, err := bufio.NewReader(c).ReadString('\n')
		assert.NilError(t, err, "channel %s", ch)
		assert.Equal(t, line, string(ch)+" got hello "+string(ch)+"\n")
		c.Close()
	}
}

// openFolder opens the launcher folder l for the rest of the test.
func openFolder(t *testing.T, l launcher.Layout) *launcher.Folder {
	t.Helper()
	f, err := launcher.OpenFolder(l)
	assert.NilError(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}
