package network

import (
	"encoding/binary"
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
	if len(ipv6s(ip.Pod.IPs)) == 0 {
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

// ipv6s returns the global (not link-local) IPv6 addresses (CIDR) of list.
func ipv6s(list []string) []string {
	var out []string
	for _, s := range list {
		if pr, err := netip.ParsePrefix(s); err == nil && pr.Addr().Is6() && !pr.Addr().Is4In6() && !pr.Addr().IsLinkLocalUnicast() {
			out = append(out, s)
		}
	}
	return slices.Clip(out)
}

// ICMPv6 types and neighbor discovery options (RFC 4861).
const (
	icmp6RouterSolicit = 133
	icmp6RouterAdvert  = 134
	ndOptSourceLLA     = 1
	ndOptPrefixInfo    = 3
	ndOptMTU           = 5
)

// routerAdvert is what a router advertisement tells the guest: no DHCPv6
// (managed and other flags off), a default route via the sender for
// Lifetime seconds, an on-link prefix for SLAAC, the MTU.
type routerAdvert struct {
	RouterMAC net.HardwareAddr // source link-layer address option
	Prefix    netip.Prefix     // a /64, on-link and autonomous
	MTU       int              // 0: no MTU option
	Lifetime  uint16           // router lifetime, seconds
}

// marshal encodes the advertisement as an ICMPv6 message from src to dst,
// checksum included.
func (ra routerAdvert) marshal(src, dst netip.Addr) []byte {
	b := []byte{icmp6RouterAdvert, 0, 0, 0, 64, 0} // type, code, checksum, cur hop limit, flags M=O=0
	b = binary.BigEndian.AppendUint16(b, ra.Lifetime)
	b = binary.BigEndian.AppendUint32(b, 0) // reachable time: unspecified
	b = binary.BigEndian.AppendUint32(b, 0) // retrans timer: unspecified
	if len(ra.RouterMAC) == 6 {
		b = append(b, ndOptSourceLLA, 1)
		b = append(b, ra.RouterMAC...)
	}
	if ra.MTU > 0 {
		b = append(b, ndOptMTU, 1, 0, 0)
		b = binary.BigEndian.AppendUint32(b, uint32(ra.MTU))
	}
	b = append(b, ndOptPrefixInfo, 4, byte(ra.Prefix.Bits()), 0xc0) // L and A flags
	b = binary.BigEndian.AppendUint32(b, 86400)                     // valid lifetime
	b = binary.BigEndian.AppendUint32(b, 14400)                     // preferred lifetime
	b = binary.BigEndian.AppendUint32(b, 0)                         // reserved
	p := ra.Prefix.Masked().Addr().As16()
	b = append(b, p[:]...)
	binary.BigEndian.PutUint16(b[2:], icmp6Checksum(src, dst, b))
	return b
}

// icmp6Checksum is the ICMPv6 checksum of msg (its checksum field zero)
// with the IPv6 pseudo-header.
func icmp6Checksum(src, dst netip.Addr, msg []byte) uint16 {
	s, d := src.As16(), dst.As16()
	pseudo := append(append(s[:], d[:]...), 0, 0, 0, 0, 0, 0, 0, 58)
	binary.BigEndian.PutUint32(pseudo[32:], uint32(len(msg)))
	var sum uint32
	for _, part := range [][]byte{pseudo, msg} {
		for i := 0; i+1 < len(part); i += 2 {
			sum += uint32(binary.BigEndian.Uint16(part[i:]))
		}
		if len(part)%2 == 1 {
			sum += uint32(part[len(part)-1]) << 8
		}
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// ipv6Packet wraps an ICMPv6 message in an IPv6 header with hop limit 255,
// as neighbor discovery requires.
func ipv6Packet(src, dst netip.Addr, icmp []byte) []byte {
	b := []byte{0x60, 0, 0, 0}
	b = binary.BigEndian.AppendUint16(b, uint16(len(icmp)))
	b = append(b, 58, 255)
	s, d := src.As16(), dst.As16()
	b = append(append(b, s[:]...), d[:]...)
	return append(b, icmp...)
}

// isRouterSolicit tells whether an IPv6 packet is an ICMPv6 router
// solicitation (sent without extension headers, as RFC 4861 clients do).
func isRouterSolicit(pkt []byte) bool {
	return len(pkt) >= 48 && pkt[0]>>4 == 6 && pkt[6] == 58 && pkt[40] == icmp6RouterSolicit && pkt[41] == 0
}
