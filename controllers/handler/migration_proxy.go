package handler

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"path"
	"path/filepath"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/virtkit/virtkit/virt/launcher"
	"github.com/virtkit/virtkit/virt/launcher/contract"
)

// MigrationChannel is one of the connections a live migration opens from
// the source launcher to the target launcher.
type MigrationChannel string

const (
	// ChannelLibvirt carries libvirt's RPC from the source's libvirtd to
	// the target's (the migration is peer to peer).
	ChannelLibvirt MigrationChannel = "libvirt"
	// ChannelMemory carries the guest's memory and device state from the
	// source QEMU to the target QEMU (the migration URI).
	ChannelMemory MigrationChannel = "memory"
	// ChannelDisks carries the copy of local disks from the source QEMU to
	// the target's NBD server (the disks URI).
	ChannelDisks MigrationChannel = "disks"
)

// MigrationChannels are every channel, in the order the proxy opens them.
var MigrationChannels = []MigrationChannel{ChannelLibvirt, ChannelMemory, ChannelDisks}

// MigrationTarget says where a migration goes: the migration's and the
// VMI's UIDs, the VMI's namespace and name, the target launcher pod's UID,
// the target node, the address its handler gave in the VMI's
// status.migrationState.targetNodeAddress, and whether the migration's
// configuration disables TLS (migrations.disableTLS).
type MigrationTarget struct {
	Migration, VMI, Pod types.UID
	Namespace, Name     string
	Node, Address       string
	DisableTLS          bool
}

// MigrationDialer connects the source handler's migration proxy to one
// channel of a migration's target launcher.
//
// The source launcher never reaches the target itself: the source handler
// listens on unix sockets inside the source pod's folder (MigrationSocket),
// which the source's libvirtd and QEMU dial as the migration's libvirt URI,
// migration URI and disks URI, and forwards every connection through a
// MigrationDialer. On the target's side the same names inside the target
// pod's folder are the target's libvirt socket and the unix sockets the
// target QEMU and NBD server listen on. No pod-to-pod route is needed, and
// the paths in the two pods are the same.
type MigrationDialer interface {
	// DialTarget connects to channel ch of the target launcher of t.
	DialTarget(ctx context.Context, t MigrationTarget, ch MigrationChannel) (net.Conn, error)
}

// LocalMigrationDialer dials the target launcher's sockets in its pod's
// folder on the target node directly: a shortcut for nodes that share one
// machine and its folders, chosen explicitly (virt-handler's
// --local-migration). Between machines, and by default on virt-local,
// TCPMigrationDialer reaches the target node's handler instead.
type LocalMigrationDialer struct {
	// PodsDirs are the pods folders (Config.PodsDir) of the nodes on this
	// machine, by node name.
	PodsDirs map[string]string
}

var _ MigrationDialer = LocalMigrationDialer{}

// DialTarget implements MigrationDialer.
func (d LocalMigrationDialer) DialTarget(ctx context.Context, t MigrationTarget, ch MigrationChannel) (net.Conn, error) {
	dir, ok := d.PodsDirs[t.Node]
	if !ok {
		return nil, fmt.Errorf("handler: migration %s: node %s is not on this machine (no pods folder known for it)", t.Migration, t.Node)
	}
	if t.Pod == "" {
		return nil, fmt.Errorf("handler: migration %s: the target launcher pod is not known", t.Migration)
	}
	c, err := dialChannel(ctx, launcher.Layout{Root: contract.PodFolder(dir, t.Pod)}, ch)
	if err != nil {
		return nil, fmt.Errorf("handler: migration %s: %s channel of the target launcher on node %s: %w", t.Migration, ch, t.Node, err)
	}
	return c, nil
}

// noMigrationDialer is the dialer of a handler given none.
type noMigrationDialer struct{}

func (noMigrationDialer) DialTarget(_ context.Context, t MigrationTarget, ch MigrationChannel) (net.Conn, error) {
	return nil, fmt.Errorf("handler: migration %s: %s channel: this handler has no MigrationDialer (WithMigrationDialer)", t.Migration, ch)
}

// MigrationSocket is the unix socket of channel ch in a launcher folder:
// the source handler's proxy listens there in the source's folder, and the
// target QEMU (memory) and NBD server (disks) listen there in the
// target's.
func MigrationSocket(l launcher.Layout, ch MigrationChannel) string {
	return filepath.Join(l.Root, migrationSocketName(ch))
}

// migrationDir is the folder of the migration sockets in a launcher folder.
const migrationDir = "migration"

func migrationSocketName(ch MigrationChannel) string {
	return path.Join(migrationDir, string(ch)+".sock")
}

// dialChannel connects to channel ch's socket in the target's launcher
// folder l (its libvirt socket for ChannelLibvirt), confined to it.
func dialChannel(ctx context.Context, l launcher.Layout, ch MigrationChannel) (net.Conn, error) {
	f, err := launcher.OpenFolder(l)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if ch == ChannelLibvirt {
		return f.DialLibvirt(ctx)
	}
	return f.Root().DialUnix(ctx, migrationSocketName(ch))
}

// makeMigrationDir makes the migration sockets' folder in the launcher
// folder f, unless it is there.
func makeMigrationDir(f *launcher.Folder) error {
	if err := f.Root().Mkdir(migrationDir, 0o770); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	// Sticky: QEMU removes or renames only the sockets it made.
	return shareWithQEMU(f, migrationDir, fs.ModeSticky|0o770)
}

// shareWithQEMU gives name in the launcher folder f to QEMU's group with
// mode: the target's QEMU listens in the migration sockets' folder, the
// source's connects to the handler's sockets, and QEMU need not be root.
func shareWithQEMU(f *launcher.Folder, name string, mode fs.FileMode) error {
	if err := f.Root().Chown(name, -1, contract.QEMUGroup); err != nil {
		return err
	}
	return f.Root().Chmod(name, mode)
}

// migrationProxy forwards the source launcher's migration connections to
// the target launcher, one listener per channel.
type migrationProxy struct {
	listeners []net.Listener
	wg        sync.WaitGroup

	conns connSet

	mu sync.Mutex
	// dialErr is the first connection to the target that failed.
	dialErr error
}

// err is the first failure to reach the target, if any: why the
// migration could not go on, which libvirt sees only as a closed
// connection.
func (p *migrationProxy) err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dialErr
}

// startProxy listens on every channel's socket in the source launcher
// folder src, which must stay open until the proxy is closed, and forwards
// each connection through dial to t.
func startProxy(src *launcher.Folder, t MigrationTarget, dial MigrationDialer, onError func(error)) (*migrationProxy, error) {
	p := &migrationProxy{}
	if err := makeMigrationDir(src); err != nil {
		return nil, errors.Join(fmt.Errorf("handler: migration proxy: %w", err), p.Close())
	}
	for _, ch := range MigrationChannels {
		name := migrationSocketName(ch)
		_ = src.Root().Remove(name) // left by an earlier migration
		ln, err := src.Root().ListenUnix(name)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("handler: migration proxy: %w", err), p.Close())
		}
		p.listeners = append(p.listeners, ln)
		if err := shareWithQEMU(src, name, 0o660); err != nil {
			return nil, errors.Join(fmt.Errorf("handler: migration proxy: %w", err), p.Close())
		}
		p.wg.Add(1)
		go p.serve(ln, t, ch, dial, onError)
	}
	return p, nil
}

func (p *migrationProxy) serve(ln net.Listener, t MigrationTarget, ch MigrationChannel, dial MigrationDialer, onError func(error)) {
	defer p.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return // closed
		}
		if !p.conns.add(c) {
			c.Close()
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer p.conns.remove(c)
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
			up, err := dial.DialTarget(ctx, t, ch)
			cancel()
			if err != nil {
				p.mu.Lock()
				if p.dialErr == nil {
					p.dialErr = err
				}
				p.mu.Unlock()
				onError(err)
				return
			}
			if !p.conns.add(up) {
				up.Close()
				return
			}
			defer p.conns.remove(up)
			defer up.Close()
			splice(c, up)
		}()
	}
}

// splice copies both ways until both directions ended, passing on each
// end of stream as a half close.
func splice(a, b net.Conn) {
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		} else {
			_ = dst.Close()
		}
		done <- struct{}{}
	}
	go cp(a, b)
	go cp(b, a)
	<-done
	<-done
}

// Close stops listening, ends every forwarded connection and removes the
// sockets (each listener removes its own).
func (p *migrationProxy) Close() error {
	var errs []error
	for _, ln := range p.listeners {
		errs = append(errs, ln.Close())
	}
	p.conns.close()
	p.wg.Wait()
	return errors.Join(errs...)
}
