package network

import "context"

// Configurator performs plans in one pod network namespace. virt/network/netns.NetNS does it
// for real; [Fake] in memory, for tests of callers.
type Configurator interface {
	// Discover lists the pod's interfaces (loopback excluded): the planner's input.
	Discover(ctx context.Context) ([]PodInterface, error)
	// Setup creates what plan needs (taps, bridges, addresses, NAT rules).
	// Running it again on a namespace it already set up changes nothing.
	Setup(ctx context.Context, plan Plan) error
	// Teardown removes what Setup created for plan, and gives a bridge
	// binding's pod interface back its addresses, MAC and routes. Missing
	// objects are not an error.
	Teardown(ctx context.Context, plan Plan) error
	// StartDHCP serves the guest of one planned interface its IPv4 address,
	// gateway, DNS and MTU (and a dual-stack guest its router
	// advertisements) until the server is stopped.
	StartDHCP(ctx context.Context, plan InterfacePlan) (DHCPServer, error)
}

// DHCPServer is a running DHCP server.
type DHCPServer interface {
	// Stop ends the server and releases its socket; it is safe to call twice.
	Stop() error
}
