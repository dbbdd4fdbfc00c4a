package network

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
}

// DNS is the resolver configuration handed to a guest.
type DNS struct {
	Servers []string `json:"servers,omitempty"`
	Search  []string `json:"search,omitempty"`
}

// Plan is the per-interface result of planning a VMI's network, keyed by
// interface name.
type Plan map[string]InterfacePlan
