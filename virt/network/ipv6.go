package network

import (
	"net"
	"net/netip"
	"slices"
	"strconv"

	virtv1 "kubevirt.io/api/core/v1"
)

// IPv6 of the masquerade binding (dual stack). KubeVirt gives the guest
// fd10:0:2::2/120 by DHCPv6; virtkit's guests need no DHCPv6 client: the
// launcher side sends router advertisements and the guest configures its
// address itself (SLAAC), which needs a /64. So the default network is
// fd10:0:2::/64, the guest's address is the EUI-64 one of its MAC (the
// planner computes it), and its gateway is the fixed link-local address
// fe80::1 on the bridge, the advertisements' source.
const (
	DefaultMasqueradeIPv6CIDR = "fd10:0:2::/64"
	// RouterLinkLocal is the bridge's link-local address: the source of the
	// router advertisements and the guest's IPv6 default gateway.
	RouterLinkLocal = "fe80::1"
)

// masqueradeIPv6 adds the IPv6 half of a masquerade plan when the pod
// interface has a global IPv6 address to masquerade behind; ip.MAC is set.
func (p *planner) masqueradeIPv6(n virtv1.Network, ip *InterfacePlan) bool {
	if len(IPv6s(ip.Pod.IPs)) == 0 {
		return true // IPv4 only
	}
	cidr := DefaultMasqueradeIPv6CIDR
	field := "spec.networks[" + strconv.Itoa(p.networkIndex[n.Name]) + "].pod.vmIPv6NetworkCIDR"
	if n.Pod != nil && n.Pod.VMIPv6NetworkCIDR != "" {
		cidr = n.Pod.VMIPv6NetworkCIDR
	}
	prefix, err := netip.ParsePrefix(cidr)
	if err != nil || !prefix.Addr().Is6() || prefix.Addr().Is4In6() {
		p.fail(fieldErr(ErrInvalidSpec, field, "%q is not an IPv6 CIDR", cidr))
		return false
	}
	if prefix.Bits() != 64 {
		p.fail(fieldErr(ErrInvalidSpec, field, "%s is not a /64: the guest configures its IPv6 address from router advertisements (SLAAC), which needs a /64", cidr))
		return false
	}
	mac, err := net.ParseMAC(ip.MAC)
	if err != nil || len(mac) != 6 {
		p.fail(fieldErr(ErrInvalidSpec, field, "no 48-bit MAC to derive the guest's IPv6 address from"))
		return false
	}
	prefix = prefix.Masked()
	gw := prefix.Addr().Next()
	ip.BridgeIPs = append(ip.BridgeIPs, netip.PrefixFrom(gw, 64).String(), RouterLinkLocal+"/64")
	ip.GuestIPs = append(ip.GuestIPs, netip.PrefixFrom(eui64(prefix, mac), 64).String())
	ip.Gateways = append(ip.Gateways, RouterLinkLocal)
	return true
}

// eui64 is the SLAAC address (modified EUI-64, RFC 4291 appendix A) of mac
// in the /64 prefix.
func eui64(prefix netip.Prefix, mac net.HardwareAddr) netip.Addr {
	a := prefix.Masked().Addr().As16()
	a[8] = mac[0] ^ 0x02
	a[9], a[10] = mac[1], mac[2]
	a[11], a[12] = 0xff, 0xfe
	a[13], a[14], a[15] = mac[3], mac[4], mac[5]
	return netip.AddrFrom16(a)
}

// IPv6s returns the global (not link-local) IPv6 addresses (CIDR) of list.
func IPv6s(list []string) []string {
	var out []string
	for _, s := range list {
		if pr, err := netip.ParsePrefix(s); err == nil && pr.Addr().Is6() && !pr.Addr().Is4In6() && !pr.Addr().IsLinkLocalUnicast() {
			out = append(out, s)
		}
	}
	return slices.Clip(out)
}
