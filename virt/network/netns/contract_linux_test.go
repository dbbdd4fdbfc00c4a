package netns_test

import (
	"testing"

	"github.com/virtkit/virtkit/virt/network/netns"
	"github.com/virtkit/virtkit/virt/network/networktest"
)

// The real namespace passes the contract the fake passes: a pod namespace
// joined to the host by a veth pair, as a CNI plugin leaves it, read back
// link by link, address by address, route by route and rule by rule.
func TestContract(t *testing.T) {
	networktest.Run(t, func(t *testing.T) networktest.Target {
		p := newPod(t)
		n, err := netns.Open(p.Path)
		must(t, err)
		t.Cleanup(func() { _ = n.Close() })
		return networktest.Target{
			Configurator: n,
			State:        func(t *testing.T) []string { return snapshot(t, p.NS) },
		}
	})
}
