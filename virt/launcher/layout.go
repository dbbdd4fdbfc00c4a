package launcher

import (
	"path/filepath"

	"github.com/virtkit/virtkit/virt/domain"
	"github.com/virtkit/virtkit/virt/launcher/contract"
	"github.com/virtkit/virtkit/virt/libvirtd"
)

// Layout is the per-VMI folder a launcher shares with its node's handler.
// Its paths are part of the handler-launcher contract (docs/sdk/launcher.md):
//
//	Root/libvirt/          the private libvirtd's instance folder (virt/libvirtd)
//	Root/libvirt/run/libvirt-sock   libvirt's socket: the handler connects here
//	Root/serial0           the first serial console's unix socket (created by QEMU)
//	Root/serial0.log       everything the first serial console printed
//	Root/vnc               the VNC server's unix socket (created by QEMU)
//	Root/ready             exists while the launcher is ready for a domain
//	Root/exit              the launcher's Result once it has ended
//
// The names are virt/launcher/contract's, for the components that need them
// without this package. Keep Root short: libvirt's socket path must fit in
// 107 bytes.
type Layout struct {
	Root string
}

// LibvirtDir is the private libvirtd's instance folder.
func (l Layout) LibvirtDir() string { return filepath.Join(l.Root, contract.LibvirtDir) }

// SerialSocket is where the domain's first serial console listens.
func (l Layout) SerialSocket() string { return filepath.Join(l.Root, contract.SerialSocket) }

// LibvirtSocket is the private libvirtd's socket.
func (l Layout) LibvirtSocket() string {
	return libvirtd.Config{Dir: l.LibvirtDir()}.Paths().Socket
}

// LibvirtURI is the libvirt URI of the private libvirtd's socket. The ready
// file holds it as the launcher sees the folder; a handler that sees the
// folder elsewhere (the node's side of the pod's hostPath) takes it from its
// own Layout instead.
func (l Layout) LibvirtURI() string { return libvirtd.Config{Dir: l.LibvirtDir()}.URI() }

// VNCSocket is where the domain's VNC server listens (domain.Paths.VNC).
func (l Layout) VNCSocket() string { return filepath.Join(l.Root, contract.VNCSocket) }

// SerialLog is the log of the domain's first serial console.
func (l Layout) SerialLog() string { return filepath.Join(l.Root, contract.SerialLog) }

// ReadyFile exists while the launcher accepts a domain.
func (l Layout) ReadyFile() string { return filepath.Join(l.Root, contract.ReadyFile) }

// ExitFile holds the launcher's Result after it ended.
func (l Layout) ExitFile() string { return filepath.Join(l.Root, contract.ExitFile) }

// DomainName is the libvirt domain name of a VMI, as KubeVirt names it; it
// is domain.Name, kept here for the launcher's callers.
func DomainName(namespace, name string) string { return domain.Name(namespace, name) }
