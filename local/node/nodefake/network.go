package nodefake

import (
	"context"
	"fmt"
	"sync"

	"github.com/virtkit/virtkit/local/node"
)

// Network is a fake node.Network: pods get addresses 10.0.0.2, 10.0.0.3,
// ... 10.0.1.0, ... (of 10.0.0.0/16) and no namespace (their processes
// would stay in the host's).
type Network struct {
	// SetupErr, while set, fails Setup.
	SetupErr error

	mu     sync.Mutex
	next   int
	active map[string]string
}

var _ node.Network = (*Network)(nil)

// Setup implements node.Network.
func (n *Network) Setup(_ context.Context, pod node.PodNetwork) (node.Attachment, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.SetupErr != nil {
		return node.Attachment{}, n.SetupErr
	}
	if n.active == nil {
		n.active = map[string]string{}
	}
	n.next++
	a := n.next + 1 // 10.0.0.2 first, through 10.0.255.255, then again
	ip := fmt.Sprintf("10.0.%d.%d", (a>>8)&0xff, a&0xff)
	n.active[pod.ID] = ip
	return node.Attachment{IPs: []string{ip}}, nil
}

// Teardown implements node.Network.
func (n *Network) Teardown(_ context.Context, pod node.PodNetwork) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.active, pod.ID)
	return nil
}

// Active returns the IDs of the pods connected now, with their address.
func (n *Network) Active() map[string]string {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := map[string]string{}
	for k, v := range n.active {
		out[k] = v
	}
	return out
}

// Images is a fake node.ImageStore: a reference maps to a folder.
type Images map[string]string

var _ node.ImageStore = Images(nil)

// Mount implements node.ImageStore.
func (im Images) Mount(_ context.Context, ref string) (string, error) {
	if dir, ok := im[ref]; ok {
		return dir, nil
	}
	return "", fmt.Errorf("%w: %q", node.ErrImageNotFound, ref)
}
