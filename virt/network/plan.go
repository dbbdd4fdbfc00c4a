package network

import (
	"errors"
	"net/netip"
)

// Binding is how a pod interface is bound to a guest NIC (KubeVirt's
// spec.domain.devices.interfaces[] binding methods).
type Binding string

const (
	BindingBridge     Binding = "bridge"
	BindingMasquerade Binding = "masquerade"
)

// InterfacePlan is how one VMI interface reaches the guest: the facts
// virt/domain needs for the NIC's host side, and the guest addressing the
// DHCP server hands out. virt/network fills it; it is plain data.
type InterfacePlan struct {
	// Interface is the VMI interface name (spec.domain.devices.interfaces[].name).
	Interface string `json:"interface"`
	// Binding is bridge or masquerade.
	Binding Binding `json:"binding"`
	// TapName is the tap device in the pod's network namespace that QEMU opens
	// (a domain interface of type ethernet with managed='no').
	TapName string `json:"tapName"`
	// MAC is the guest NIC's MAC address.
	MAC string `json:"mac"`
	// MTU is the guest NIC's MTU; zero leaves QEMU's default.
	MTU int `json:"mtu,omitempty"`
	// Queues is the number of queue pairs for a multi-queue virtio NIC; 0 or 1
	// means single queue.
	Queues int `json:"queues,omitempty"`
	// GuestIPs are the addresses the guest obtains (CIDR notation).
	GuestIPs []string `json:"guestIPs,omitempty"`
	// Gateways are the default routes' next hops the guest is given.
	Gateways []string `json:"gateways,omitempty"`
	// DNS holds name servers and search domains for the guest.
	DNS DNS `json:"dns,omitempty"`

	// Network is the VMI network (spec.networks[].name) the interface uses.
	Network string `json:"network,omitempty"`
	// Pod is the pod interface the guest NIC is bound to, as it was found
	// before setup. Bridge binding takes its addresses and MAC for the guest
	// and teardown gives them back, so the plan must be kept (it is plain
	// JSON) for a restarted handler to set up again or tear down.
	Pod PodInterface `json:"pod,omitempty"`
	// Bridge is the Linux bridge in the pod that joins the tap to the pod
	// side (KubeVirt's k6t-<pod interface>).
	Bridge string `json:"bridge,omitempty"`
	// BridgeIPs are the addresses setup gives the bridge (CIDR notation):
	// with masquerade, the guest's gateway; none with bridge binding.
	BridgeIPs []string `json:"bridgeIPs,omitempty"`
	// PodPortMAC is the MAC the pod interface gets while enslaved to the
	// bridge (bridge binding only): the guest takes the original one.
	PodPortMAC string `json:"podPortMAC,omitempty"`
	// Ports are the ports forwarded from the pod's address to the guest
	// (masquerade only). Empty forwards every port and protocol.
	Ports []Port `json:"ports,omitempty"`
	// Routes are routes other than the default one that the guest is given
	// (DHCP option 121).
	Routes []Route `json:"routes,omitempty"`
	// Hostname is handed to the guest by DHCP (option 12) when set.
	Hostname string `json:"hostname,omitempty"`
}

// PodInterface is a network interface found in a pod's network namespace,
// the planner's input from the node side (see [NetNS.Discover]).
type PodInterface struct {
	// Name is the interface's name in the pod (eth0, net1, ...).
	Name string `json:"name"`
	// MAC is its hardware address.
	MAC string `json:"mac,omitempty"`
	// IPs are its global addresses in CIDR notation.
	IPs []string `json:"ips,omitempty"`
	// Routes are the routes through it, the default one included.
	Routes []Route `json:"routes,omitempty"`
	// MTU is its MTU.
	MTU int `json:"mtu,omitempty"`
}

// Route is a route: a destination in CIDR notation (0.0.0.0/0 or ::/0 for
// the default route) and an optional next hop.
type Route struct {
	Dst     string `json:"dst"`
	Gateway string `json:"gateway,omitempty"`
}

// Port is a port forwarded to a masquerade guest.
type Port struct {
	// Protocol is TCP or UDP.
	Protocol string `json:"protocol"`
	// Port is the port number, 1-65535, the same on the pod and in the guest.
	Port int `json:"port"`
}

// DNS is the resolver configuration handed to a guest.
type DNS struct {
	Servers []string `json:"servers,omitempty"`
	Search  []string `json:"search,omitempty"`
}

// Plan is the per-interface result of planning a VMI's network, keyed by
// interface name.
type Plan map[string]InterfacePlan

// ErrNoGuestIPv4 marks an interface plan that gives the guest no IPv4
// address, which a DHCPv4 server cannot serve.
var ErrNoGuestIPv4 = errors.New("the plan gives the guest no IPv4 address")

// GuestIPv4 is the guest's IPv4 address, the one a DHCPv4 server hands out:
// the first IPv4 entry of GuestIPs. Without one it returns ErrNoGuestIPv4.
func (ip *InterfacePlan) GuestIPv4() (netip.Prefix, error) {
	v4 := IPv4s(ip.GuestIPs)
	if len(v4) == 0 {
		return netip.Prefix{}, ErrNoGuestIPv4
	}
	return netip.ParsePrefix(v4[0])
}
