package network

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	virtv1 "kubevirt.io/api/core/v1"
)

// KubeVirt's defaults for the masquerade binding's private network.
const (
	DefaultMasqueradeCIDR = "10.0.2.0/24"
)

// PlanOption changes how [MakePlan] plans.
type PlanOption func(*planOptions)

type planOptions struct {
	dns       DNS
	maxQueues int
}

// WithDNS sets the resolver configuration handed to every guest (usually
// read from the pod's /etc/resolv.conf by the caller).
func WithDNS(d DNS) PlanOption { return func(o *planOptions) { o.dns = d } }

// WithMaxQueues caps the queue pairs of a multi-queue NIC (default 8).
func WithMaxQueues(n int) PlanOption { return func(o *planOptions) { o.maxQueues = n } }

// MakePlan plans how each interface of vmi reaches its guest, from the pod
// interfaces found in the launcher pod (see [NetNS.Discover]). It is pure: it
// touches nothing. Bad input gives an error joining one *FieldError per
// rejected field (unknown network, a binding the network cannot carry,
// duplicate MACs, ports out of range, ...), and no plan.
//
// Pod networks map to eth0, other Multus networks to KubeVirt's hashed
// names (PodInterfaceNames); a Multus network with default: true takes
// eth0. Taps and in-pod bridges are named after the pod interface, so an
// interface keeps its links whatever else the spec gains or loses.
func MakePlan(vmi *virtv1.VirtualMachineInstance, pod []PodInterface, opts ...PlanOption) (Plan, error) {
	o := planOptions{maxQueues: 8}
	for _, opt := range opts {
		opt(&o)
	}
	if vmi == nil {
		return nil, fmt.Errorf("network: %w: no VirtualMachineInstance", ErrInvalidSpec)
	}
	p := planner{vmi: vmi, pod: pod, opts: o, plan: Plan{}, macs: map[string]string{}}
	p.mapNetworks()
	used := map[string]string{}
	for i := range vmi.Spec.Domain.Devices.Interfaces {
		iface := &vmi.Spec.Domain.Devices.Interfaces[i]
		field := "spec.domain.devices.interfaces[" + strconv.Itoa(i) + "]"
		if iface.State == virtv1.InterfaceStateAbsent {
			// Being unplugged: no NIC, but its network is still spoken for.
			p.networkUsed[iface.Name] = true
			continue
		}
		if other, dup := used[iface.Name]; dup {
			p.fail(fieldErr(ErrInvalidSpec, field+".name", "name %q is also used by %s", iface.Name, other))
			continue
		}
		used[iface.Name] = field
		p.planInterface(field, iface)
	}
	for k, n := range vmi.Spec.Networks {
		if !p.networkUsed[n.Name] {
			p.fail(fieldErr(ErrInvalidSpec, "spec.networks["+strconv.Itoa(k)+"]", "no interface uses network %q", n.Name))
		}
	}
	if len(p.errs) > 0 {
		return nil, errors.Join(p.errs...)
	}
	return p.plan, nil
}

type planner struct {
	vmi  *virtv1.VirtualMachineInstance
	pod  []PodInterface
	opts planOptions
	plan Plan
	errs []error
	// macs maps a guest MAC (lower case) to the field that claimed it.
	macs map[string]string
	// podName maps a network name to its pod interface name; networkIndex to
	// its index in spec.networks.
	podName      map[string]string
	networkIndex map[string]int
	networkUsed  map[string]bool
}

func (p *planner) fail(err error) { p.errs = append(p.errs, err) }

func (p *planner) mapNetworks() {
	p.podName = PodInterfaceNames(p.vmi.Spec.Networks)
	p.networkIndex = map[string]int{}
	p.networkUsed = map[string]bool{}
	for k, n := range p.vmi.Spec.Networks {
		field := "spec.networks[" + strconv.Itoa(k) + "]"
		if _, dup := p.networkIndex[n.Name]; dup {
			p.fail(fieldErr(ErrInvalidSpec, field+".name", "network name %q is used twice", n.Name))
			continue
		}
		p.networkIndex[n.Name] = k
		if _, ok := p.podName[n.Name]; !ok {
			p.fail(fieldErr(ErrInvalidSpec, field, "network %q names no source (pod or multus)", n.Name))
		}
	}
}

func (p *planner) planInterface(field string, iface *virtv1.Interface) {
	k, ok := p.networkIndex[iface.Name]
	if !ok {
		p.fail(fieldErr(ErrInvalidSpec, field+".name", "no network named %q in spec.networks", iface.Name))
		return
	}
	network := p.vmi.Spec.Networks[k]
	podName, ok := p.podName[iface.Name]
	if !ok {
		return // the network itself was rejected
	}
	p.networkUsed[iface.Name] = true
	onPodNetwork := podName == PodInterfaceName

	ip := InterfacePlan{
		Interface: iface.Name,
		Network:   network.Name,
		TapName:   tapName(podName),
		Bridge:    bridgeName(podName),
		DNS:       p.opts.dns,
		Hostname:  p.hostname(),
	}
	b := &iface.InterfaceBindingMethod
	switch {
	case b.Masquerade != nil:
		ip.Binding = BindingMasquerade
		if !onPodNetwork {
			p.fail(fieldErr(ErrInvalidSpec, field+".masquerade", "masquerade needs the pod network; network %q is a secondary Multus network", network.Name))
			return
		}
	case b.Bridge != nil:
		ip.Binding = BindingBridge
	case iface.Binding != nil:
		p.fail(fieldErr(ErrUnsupported, field+".binding", "network binding plugins are not supported"))
		return
	case b.SRIOV != nil:
		p.fail(fieldErr(ErrUnsupported, field+".sriov", "the SR-IOV binding is not supported"))
		return
	case b.PasstBinding != nil, b.DeprecatedPasst != nil:
		p.fail(fieldErr(ErrUnsupported, field+".passtBinding", "the passt binding is not supported"))
		return
	case b.DeprecatedSlirp != nil, b.DeprecatedMacvtap != nil:
		p.fail(fieldErr(ErrUnsupported, field, "the slirp and macvtap bindings were removed from KubeVirt"))
		return
	default:
		p.fail(fieldErr(ErrInvalidSpec, field, "names no binding (bridge or masquerade)"))
		return
	}

	ports, ok := p.ports(field, iface)
	if !ok {
		return
	}
	ip.Ports = ports

	podIface, found := p.findPod(podName)
	if !found {
		p.fail(fieldErr(ErrNoPodInterface, "spec.networks["+strconv.Itoa(k)+"]", "network %q: pod interface %s not found (pod has %s)", network.Name, podName, p.podNames()))
		return
	}
	ip.Pod = podIface
	ip.MTU = podIface.MTU

	if iface.MacAddress != "" {
		mac, err := net.ParseMAC(iface.MacAddress)
		if err != nil || len(mac) != 6 {
			p.fail(fieldErr(ErrInvalidSpec, field+".macAddress", "%q is not a 48-bit MAC address", iface.MacAddress))
			return
		}
		if mac[0]&1 == 1 {
			p.fail(fieldErr(ErrInvalidSpec, field+".macAddress", "%s is a multicast address", mac))
			return
		}
		ip.MAC = mac.String()
	}

	switch ip.Binding {
	case BindingMasquerade:
		if !p.masquerade(field, network, &ip) {
			return
		}
	case BindingBridge:
		p.bridge(&ip)
	}
	if !p.claimMAC(field, ip.MAC) {
		return
	}
	ip.Queues = p.queues(iface)
	p.plan[iface.Name] = ip
}

func (p *planner) hostname() string {
	if p.vmi.Spec.Hostname != "" {
		return p.vmi.Spec.Hostname
	}
	return p.vmi.Name
}

func (p *planner) ports(field string, iface *virtv1.Interface) ([]Port, bool) {
	if len(iface.Ports) == 0 {
		return nil, true
	}
	if iface.Masquerade == nil {
		p.fail(fieldErr(ErrInvalidSpec, field+".ports", "only the masquerade binding forwards ports"))
		return nil, false
	}
	ok := true
	seen := map[Port]int{}
	out := make([]Port, 0, len(iface.Ports))
	for j, port := range iface.Ports {
		pf := field + ".ports[" + strconv.Itoa(j) + "]"
		proto := strings.ToUpper(port.Protocol)
		if proto == "" {
			proto = "TCP"
		}
		if proto != "TCP" && proto != "UDP" {
			p.fail(fieldErr(ErrInvalidSpec, pf+".protocol", "%q is not TCP or UDP", port.Protocol))
			ok = false
		}
		if port.Port < 1 || port.Port > 65535 {
			p.fail(fieldErr(ErrInvalidSpec, pf+".port", "%d is out of range 1-65535", port.Port))
			ok = false
			continue
		}
		pp := Port{Protocol: proto, Port: int(port.Port)}
		if prev, dup := seen[pp]; dup {
			p.fail(fieldErr(ErrInvalidSpec, pf, "%s %d is also forwarded by ports[%d]", proto, port.Port, prev))
			ok = false
		}
		seen[pp] = j
		out = append(out, pp)
	}
	return out, ok
}

func (p *planner) findPod(name string) (PodInterface, bool) {
	for _, pi := range p.pod {
		if pi.Name == name {
			return pi, true
		}
	}
	return PodInterface{}, false
}

func (p *planner) podNames() string {
	if len(p.pod) == 0 {
		return "none"
	}
	var names []string
	for _, pi := range p.pod {
		names = append(names, pi.Name)
	}
	return strings.Join(names, ", ")
}

func (p *planner) masquerade(field string, n virtv1.Network, ip *InterfacePlan) bool {
	cidr := DefaultMasqueradeCIDR
	cidrField := "spec.networks[" + strconv.Itoa(p.networkIndex[n.Name]) + "].pod.vmNetworkCIDR"
	if n.Pod != nil && n.Pod.VMNetworkCIDR != "" {
		cidr = n.Pod.VMNetworkCIDR
	}
	prefix, err := netip.ParsePrefix(cidr)
	if err != nil || !prefix.Addr().Is4() {
		p.fail(fieldErr(ErrInvalidSpec, cidrField, "%q is not an IPv4 CIDR", cidr))
		return false
	}
	if prefix.Bits() > 30 {
		p.fail(fieldErr(ErrInvalidSpec, cidrField, "%s has no room for a gateway and a guest (at most /30)", cidr))
		return false
	}
	if len(IPv4s(ip.Pod.IPs)) == 0 {
		p.fail(fieldErr(ErrInvalidSpec, field+".masquerade", "pod interface %s has no IPv4 address to masquerade behind (an IPv6-only pod is not supported; dual stack is)", ip.Pod.Name))
		return false
	}
	prefix = prefix.Masked()
	gw := prefix.Addr().Next()
	guest := gw.Next()
	ip.BridgeIPs = []string{netip.PrefixFrom(gw, prefix.Bits()).String()}
	ip.GuestIPs = []string{netip.PrefixFrom(guest, prefix.Bits()).String()}
	ip.Gateways = []string{gw.String()}
	if ip.MAC == "" {
		ip.MAC = derivedMAC(p.vmi.Namespace + "/" + p.vmi.Name + "/" + ip.Interface)
	}
	return p.masqueradeIPv6(n, ip)
}

// bridge gives the guest the pod interface's IPv4 addresses, MAC, default
// gateway and routes, as KubeVirt's bridge binding does.
func (p *planner) bridge(ip *InterfacePlan) {
	ip.GuestIPs = IPv4s(ip.Pod.IPs)
	for _, r := range ip.Pod.Routes {
		dst, err := netip.ParsePrefix(r.Dst)
		if err != nil || !dst.Addr().Is4() || r.Gateway == "" {
			continue
		}
		if dst.Bits() == 0 {
			ip.Gateways = append(ip.Gateways, r.Gateway)
		} else {
			ip.Routes = append(ip.Routes, r)
		}
	}
	if ip.MAC == "" {
		ip.MAC = ip.Pod.MAC
	}
	if ip.MAC == "" {
		ip.MAC = derivedMAC(p.vmi.Namespace + "/" + p.vmi.Name + "/" + ip.Interface)
	}
	ip.PodPortMAC = derivedMAC(p.vmi.Namespace + "/" + p.vmi.Name + "/" + ip.Interface + "/pod-port")
}

func (p *planner) claimMAC(field, mac string) bool {
	key := strings.ToLower(mac)
	if other, dup := p.macs[key]; dup {
		p.fail(fieldErr(ErrInvalidSpec, field+".macAddress", "MAC %s is also used by %s", mac, other))
		return false
	}
	p.macs[key] = field
	return true
}

// queues is the number of queue pairs: one per vCPU when the VMI asks for
// a multi-queue virtio NIC, capped.
func (p *planner) queues(iface *virtv1.Interface) int {
	d := &p.vmi.Spec.Domain
	if d.Devices.NetworkInterfaceMultiQueue == nil || !*d.Devices.NetworkInterfaceMultiQueue {
		return 0
	}
	if iface.Model != "" && iface.Model != "virtio" {
		return 0
	}
	vcpus := 1
	if c := d.CPU; c != nil {
		vcpus = max(int(c.Cores), 1) * max(int(c.Sockets), 1) * max(int(c.Threads), 1)
	}
	n := min(vcpus, p.opts.maxQueues)
	if n < 2 {
		return 0
	}
	return n
}

// IPv4s returns the IPv4 addresses (CIDR) of list, in order.
func IPv4s(list []string) []string {
	var out []string
	for _, s := range list {
		if pr, err := netip.ParsePrefix(s); err == nil && pr.Addr().Is4() {
			out = append(out, s)
		}
	}
	return slices.Clip(out)
}

// derivedMAC is a stable, locally administered unicast MAC for key.
func derivedMAC(key string) string { return previewMAC(key) }
