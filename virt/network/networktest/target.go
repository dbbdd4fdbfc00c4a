package networktest

import (
	"testing"

	"github.com/virtkit/virtkit/virt/network"
)

// Target is one network.Configurator under test and what the suite needs
// to know about it.
type Target struct {
	// Configurator is the implementation under test, on a pod namespace
	// with one interface that has an IPv4 address and a default route (as a
	// CNI plugin leaves a pod).
	Configurator network.Configurator
	// State lists what the namespace holds now, sorted: links, addresses,
	// routes and rules of a real namespace, the interfaces set up and DHCP
	// servers running in a fake. The suite compares it across Setup and
	// Teardown.
	State func(t *testing.T) []string
	// DHCPRunning, when set, reports how many DHCP servers serve the
	// interface; the suite then checks that StartDHCP and Stop change it.
	DHCPRunning func(t *testing.T, iface string) int
}
