package hollow

import (
	"context"
	"fmt"
	"net/url"
	"testing/fstest"

	"github.com/virtkit/virtkit/controllers/handler"
	"github.com/virtkit/virtkit/virt/domain"
	"github.com/virtkit/virtkit/virt/network"
	"github.com/virtkit/virtkit/virt/storage"
	storagefake "github.com/virtkit/virtkit/virt/storage/fake"
)

// HandlerOptions are the controllers/handler options that reach this
// node's hollow launchers: each pod's fake domain Manager through its
// libvirt socket, the pod's network as virt/network's Fake (one eth0), its
// disks through virt/storage/fake, and a node file system with no host
// facts (no cpuset, NUMA or hugepages to report).
func (n *Node) HandlerOptions() []handler.Option {
	return []handler.Option{
		handler.WithConnector(n.Connect),
		handler.WithPodOpener(n.OpenPod),
		handler.WithStorage(func(storage.FS) (storage.Interface, storage.Inspector) {
			return storagefake.New(), storagefake.FS{}
		}),
		handler.WithNodeFS(fstest.MapFS{}),
	}
}

// Connect is the handler's Connector: the fake Manager of the pod whose
// libvirt socket the URI names.
func (n *Node) Connect(_ context.Context, uri string) (domain.Manager, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return nil, fmt.Errorf("hollow: libvirt URI %q: %w", uri, err)
	}
	socket := u.Query().Get("socket")
	if socket == "" {
		return nil, fmt.Errorf("hollow: libvirt URI %q: names no socket", uri)
	}
	p, err := n.podAt(socket)
	if err != nil {
		return nil, err
	}
	return shared{p.dom}, nil
}

// OpenPod is the handler's PodOpener: the pod whose libvirt socket is at
// socket (a path or a /proc/self/fd handle of it).
func (n *Node) OpenPod(_ context.Context, socket string) (*handler.Pod, error) {
	p, err := n.podAt(socket)
	if err != nil {
		return nil, err
	}
	// One address of 10.0.0.0/8 per pod: 10.0.0.1 for the first.
	a := p.pid - firstPID + 1
	b2, b1, b0 := (a>>16)&0xff, (a>>8)&0xff, a&0xff
	eth0 := network.PodInterface{Name: "eth0", MTU: 1500,
		MAC: fmt.Sprintf("0a:58:0a:%02x:%02x:%02x", b2, b1, b0),
		IPs: []string{fmt.Sprintf("10.%d.%d.%d/8", b2, b1, b0)}}
	return &handler.Pod{PID: p.pid, Network: &network.Fake{PodInterfaces: []network.PodInterface{eth0}}, Root: p.root,
		Close: func() error { return nil }}, nil
}
