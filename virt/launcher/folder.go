package launcher

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"path/filepath"

	"github.com/virtkit/virtkit/virt/confined"
	"github.com/virtkit/virtkit/virt/launcher/contract"
)

// maxResultSize bounds the exit file a node reads: a Result is a few dozen
// bytes.
const maxResultSize = 64 << 10

// Folder is a launcher folder opened from the node's side. The launcher
// pod can write the folder, so every name in it is resolved without
// following a symbolic link and without leaving the folder
// (virt/confined's NoSymlinks): a socket must be a socket, a file a regular
// file, and files are read with a bound. Names are the Layout's, relative
// to the folder (Layout{}'s).
type Folder struct {
	root *confined.Root
}

// OpenFolder opens the launcher folder l.Root, which the caller trusts
// itself (a pod's emptyDir in the kubelet's pods folder: the pod writes
// into it but cannot replace it).
func OpenFolder(l Layout) (*Folder, error) {
	r, err := confined.Open(l.Root, confined.NoSymlinks)
	if err != nil {
		return nil, fmt.Errorf("launcher: folder: %w", err)
	}
	return &Folder{root: r}, nil
}

// Close releases the folder.
func (f *Folder) Close() error { return f.root.Close() }

// Root is the folder, for the other sockets a node daemon keeps in it
// (the migration proxy's).
func (f *Folder) Root() *confined.Root { return f.root }

// Ready reports whether the launcher's ready file is there (a regular
// file, not a link).
func (f *Folder) Ready() (bool, error) {
	fi, err := f.root.Lstat(Layout{}.ReadyFile())
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("launcher: ready file: %w", err)
	case !fi.Mode().IsRegular():
		return false, fmt.Errorf("launcher: ready file %s: %w (%s)", f.path(Layout{}.ReadyFile()), confined.ErrNotRegular, fi.Mode().Type())
	}
	return true, nil
}

// Result reads the Result the launcher recorded; ended is false, with no
// error, while there is none.
func (f *Folder) Result() (r Result, ended bool, err error) {
	b, err := f.root.ReadFile(Layout{}.ExitFile(), maxResultSize)
	if errors.Is(err, fs.ErrNotExist) {
		return Result{}, false, nil
	}
	if err != nil {
		return Result{}, false, fmt.Errorf("launcher: read result: %w", err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return Result{}, false, fmt.Errorf("launcher: result in %s: %w", f.path(Layout{}.ExitFile()), err)
	}
	return r, true, nil
}

// DialSerial connects to the guest's first serial console.
func (f *Folder) DialSerial(ctx context.Context) (net.Conn, error) {
	return f.root.DialUnix(ctx, contract.SerialSocket)
}

// DialVNC connects to the guest's VNC server.
func (f *Folder) DialVNC(ctx context.Context) (net.Conn, error) {
	return f.root.DialUnix(ctx, contract.VNCSocket)
}

// DialLibvirt connects to the private libvirtd.
func (f *Folder) DialLibvirt(ctx context.Context) (net.Conn, error) {
	return f.root.DialUnix(ctx, Layout{}.LibvirtSocket())
}

// LibvirtSocket checks the private libvirtd's socket and returns a path
// that reaches that very socket, for libvirt's client library, which
// dials by path, valid until release (libvirtd.SocketURI makes its URI).
func (f *Folder) LibvirtSocket() (path string, release func() error, err error) {
	return f.root.SocketPath(Layout{}.LibvirtSocket())
}

func (f *Folder) path(name string) string { return filepath.Join(f.root.Name(), name) }
