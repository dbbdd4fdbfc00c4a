package netns

import (
	"encoding/binary"
	"net"
	"net/netip"
)

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
