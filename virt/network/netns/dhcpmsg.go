package netns

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/virtkit/virtkit/virt/network"
)

// DHCPv4 message types (RFC 2132 option 53).
const (
	dhcpDiscover = 1
	dhcpOffer    = 2
	dhcpRequest  = 3
	dhcpDecline  = 4
	dhcpAck      = 5
	dhcpNak      = 6
	dhcpRelease  = 7
	dhcpInform   = 8
)

// DHCPv4 options used here.
const (
	optPad          = 0
	optSubnetMask   = 1
	optRouter       = 3
	optDNS          = 6
	optHostname     = 12
	optDomainName   = 15
	optMTU          = 26
	optBroadcast    = 28
	optRequestedIP  = 50
	optLeaseTime    = 51
	optMessageType  = 53
	optServerID     = 54
	optRenewalTime  = 58
	optRebindTime   = 59
	optClasslessRts = 121
	optEnd          = 255
)

const (
	bootpHeaderLen = 236
	bootpMinLen    = 300 // some clients drop shorter BOOTP replies
)

var dhcpMagic = [4]byte{99, 130, 83, 99}

// dhcpMessage is the part of a DHCPv4 message the server reads or writes.
type dhcpMessage struct {
	op      byte
	xid     uint32
	flags   uint16
	ciaddr  netip.Addr
	yiaddr  netip.Addr
	siaddr  netip.Addr
	chaddr  net.HardwareAddr
	msgType byte
	// requested is option 50; serverID option 54 (invalid when absent).
	requested netip.Addr
	serverID  netip.Addr
	options   []dhcpOption
}

type dhcpOption struct {
	code byte
	data []byte
}

var errNotDHCP = errors.New("not a DHCPv4 request")

// parseDHCP decodes a BOOTREQUEST from an Ethernet client.
func parseDHCP(b []byte) (*dhcpMessage, error) {
	if len(b) < bootpHeaderLen+4 || b[0] != 1 || b[1] != 1 || b[2] != 6 {
		return nil, errNotDHCP
	}
	if [4]byte(b[bootpHeaderLen:bootpHeaderLen+4]) != dhcpMagic {
		return nil, errNotDHCP
	}
	m := &dhcpMessage{
		op:     b[0],
		xid:    binary.BigEndian.Uint32(b[4:8]),
		flags:  binary.BigEndian.Uint16(b[10:12]),
		ciaddr: netip.AddrFrom4([4]byte(b[12:16])),
		chaddr: net.HardwareAddr(append([]byte(nil), b[28:34]...)),
	}
	opts := b[bootpHeaderLen+4:]
	for len(opts) > 0 {
		code := opts[0]
		if code == optEnd {
			break
		}
		if code == optPad {
			opts = opts[1:]
			continue
		}
		if len(opts) < 2 || len(opts) < 2+int(opts[1]) {
			return nil, errNotDHCP
		}
		data := opts[2 : 2+int(opts[1])]
		switch code {
		case optMessageType:
			if len(data) == 1 {
				m.msgType = data[0]
			}
		case optRequestedIP:
			if len(data) == 4 {
				m.requested = netip.AddrFrom4([4]byte(data))
			}
		case optServerID:
			if len(data) == 4 {
				m.serverID = netip.AddrFrom4([4]byte(data))
			}
		}
		opts = opts[2+int(opts[1]):]
	}
	if m.msgType == 0 {
		return nil, errNotDHCP
	}
	return m, nil
}

// marshal encodes a BOOTREPLY.
func (m *dhcpMessage) marshal() []byte {
	b := make([]byte, bootpHeaderLen, bootpMinLen)
	b[0], b[1], b[2] = 2, 1, 6
	binary.BigEndian.PutUint32(b[4:8], m.xid)
	binary.BigEndian.PutUint16(b[10:12], m.flags)
	put4 := func(off int, a netip.Addr) {
		if a.Is4() {
			a4 := a.As4()
			copy(b[off:off+4], a4[:])
		}
	}
	put4(12, m.ciaddr)
	put4(16, m.yiaddr)
	put4(20, m.siaddr)
	copy(b[28:44], m.chaddr)
	b = append(b, dhcpMagic[:]...)
	b = append(b, optMessageType, 1, m.msgType)
	for _, o := range m.options {
		// Options longer than 255 bytes are split (RFC 3396).
		data := o.data
		for {
			n := min(len(data), 255)
			b = append(b, o.code, byte(n))
			b = append(b, data[:n]...)
			data = data[n:]
			if len(data) == 0 {
				break
			}
		}
	}
	b = append(b, optEnd)
	for len(b) < bootpMinLen {
		b = append(b, optPad)
	}
	return b
}

// lease is what the server hands out to its one client.
type lease struct {
	addr      netip.Prefix
	serverID  netip.Addr
	routers   []netip.Addr
	dns       []netip.Addr
	search    []string
	routes    []network.Route
	mtu       int
	hostname  string
	leaseTime time.Duration
}

// leaseFor turns a planned interface into its DHCP lease. The server
// identifier is the gateway on the bridge (masquerade) or, with bridge
// binding where the pod has no address left, a link-local address as in
// KubeVirt; replies are sent on the tap, so it needs no address there.
func leaseFor(ip *network.InterfacePlan, leaseTime time.Duration) (*lease, error) {
	addr, err := ip.GuestIPv4()
	if err != nil {
		return nil, err
	}
	l := &lease{addr: addr, mtu: ip.MTU, hostname: ip.Hostname, leaseTime: leaseTime, routes: ip.Routes, search: ip.DNS.Search}
	for _, g := range ip.Gateways {
		if a, err := netip.ParseAddr(g); err == nil && a.Is4() {
			l.routers = append(l.routers, a)
		}
	}
	for _, s := range ip.DNS.Servers {
		if a, err := netip.ParseAddr(s); err == nil && a.Is4() {
			l.dns = append(l.dns, a)
		}
	}
	l.serverID = netip.MustParseAddr("169.254.75.10")
	if v4 := network.IPv4s(ip.BridgeIPs); len(v4) > 0 {
		if p, err := netip.ParsePrefix(v4[0]); err == nil {
			l.serverID = p.Addr()
		}
	}
	return l, nil
}

// reply answers req for the lease, or returns nil when req is not for this
// server (another server's request, a release, a decline).
func (l *lease) reply(req *dhcpMessage) *dhcpMessage {
	resp := &dhcpMessage{xid: req.xid, flags: req.flags, chaddr: req.chaddr, siaddr: l.serverID}
	switch req.msgType {
	case dhcpDiscover:
		resp.msgType = dhcpOffer
	case dhcpRequest:
		if req.serverID.IsValid() && req.serverID != l.serverID {
			return nil // the client chose another server
		}
		want := req.requested
		if !want.IsValid() {
			want = req.ciaddr
		}
		if want != l.addr.Addr() {
			resp.msgType = dhcpNak
			resp.siaddr = netip.Addr{}
			resp.options = []dhcpOption{{optServerID, l.serverID.AsSlice()}}
			return resp
		}
		resp.msgType = dhcpAck
		resp.ciaddr = req.ciaddr
	case dhcpInform:
		resp.msgType = dhcpAck
		resp.ciaddr = req.ciaddr
		resp.options = l.configOptions()
		resp.options = append([]dhcpOption{{optServerID, l.serverID.AsSlice()}}, resp.options...)
		return resp
	default:
		return nil
	}
	resp.yiaddr = l.addr.Addr()
	secs := uint32(l.leaseTime / time.Second)
	resp.options = []dhcpOption{
		{optServerID, l.serverID.AsSlice()},
		{optLeaseTime, binary.BigEndian.AppendUint32(nil, secs)},
		{optRenewalTime, binary.BigEndian.AppendUint32(nil, secs/2)},
		{optRebindTime, binary.BigEndian.AppendUint32(nil, secs/8*7)},
	}
	resp.options = append(resp.options, l.configOptions()...)
	return resp
}

// answer is the server's whole reading of a frame a guest sent: an IPv4
// packet to UDP port 67 holding a BOOTREQUEST from mac. It returns the
// reply and its IPv4 packet, or nil when the frame is not a request for
// this server. A client with an address (renewing) gets a unicast; one
// without gets an IP broadcast, framed to its MAC by the caller.
func (l *lease) answer(pkt []byte, mac net.HardwareAddr) (*dhcpMessage, []byte) {
	payload, _, _, dstPort, ok := parseUDP4(pkt)
	if !ok || dstPort != 67 {
		return nil, nil
	}
	req, err := parseDHCP(payload)
	if err != nil || !bytes.Equal(req.chaddr, mac) {
		return nil, nil
	}
	resp := l.reply(req)
	if resp == nil {
		return nil, nil
	}
	dst := netip.AddrFrom4([4]byte{255, 255, 255, 255})
	if req.ciaddr.IsValid() && !req.ciaddr.IsUnspecified() && resp.msgType != dhcpNak {
		dst = req.ciaddr
	}
	return resp, udp4Packet(l.serverID, dst, 67, 68, resp.marshal())
}

// configOptions are the options carrying the guest's configuration.
func (l *lease) configOptions() []dhcpOption {
	mask := net.CIDRMask(l.addr.Bits(), 32)
	opts := []dhcpOption{{optSubnetMask, []byte(mask)}}
	bcast := l.addr.Masked().Addr().As4()
	for i := range bcast {
		bcast[i] |= ^mask[i]
	}
	opts = append(opts, dhcpOption{optBroadcast, bcast[:]})
	if len(l.routers) > 0 {
		opts = append(opts, dhcpOption{optRouter, addrBytes(l.routers)})
	}
	if len(l.dns) > 0 {
		opts = append(opts, dhcpOption{optDNS, addrBytes(l.dns)})
	}
	if len(l.search) > 0 {
		opts = append(opts, dhcpOption{optDomainName, []byte(strings.Join(l.search, " "))})
	}
	if l.hostname != "" {
		opts = append(opts, dhcpOption{optHostname, []byte(l.hostname)})
	}
	if l.mtu >= 68 && l.mtu <= 65535 {
		opts = append(opts, dhcpOption{optMTU, binary.BigEndian.AppendUint16(nil, uint16(l.mtu))})
	}
	if rts := classlessRoutes(l.routes, l.routers); len(rts) > 0 {
		opts = append(opts, dhcpOption{optClasslessRts, rts})
	}
	return opts
}

// classlessRoutes encodes option 121 (RFC 3442). A client that takes it
// ignores option 3, so the default route is repeated in it.
func classlessRoutes(routes []network.Route, routers []netip.Addr) []byte {
	if len(routes) == 0 {
		return nil
	}
	var b []byte
	add := func(dst netip.Prefix, gw netip.Addr) {
		b = append(b, byte(dst.Bits()))
		a := dst.Masked().Addr().As4()
		b = append(b, a[:(dst.Bits()+7)/8]...)
		g := gw.As4()
		b = append(b, g[:]...)
	}
	for _, r := range routes {
		dst, err := netip.ParsePrefix(r.Dst)
		gw, gerr := netip.ParseAddr(r.Gateway)
		if err != nil || gerr != nil || !dst.Addr().Is4() || !gw.Is4() {
			continue
		}
		add(dst, gw)
	}
	if len(b) > 0 && len(routers) > 0 {
		add(netip.MustParsePrefix("0.0.0.0/0"), routers[0])
	}
	return b
}

func addrBytes(list []netip.Addr) []byte {
	var b []byte
	for _, a := range list {
		b = append(b, a.AsSlice()...)
	}
	return b
}

// udp4Packet wraps payload in IPv4 and UDP headers, with checksums.
func udp4Packet(src, dst netip.Addr, srcPort, dstPort uint16, payload []byte) []byte {
	const ipLen, udpLen = 20, 8
	total := ipLen + udpLen + len(payload)
	b := make([]byte, total)
	b[0] = 0x45
	b[1] = 0x10 // low delay, as DHCP servers commonly set
	binary.BigEndian.PutUint16(b[2:4], uint16(total))
	b[8] = 64
	b[9] = 17
	s, d := src.As4(), dst.As4()
	copy(b[12:16], s[:])
	copy(b[16:20], d[:])
	binary.BigEndian.PutUint16(b[10:12], checksum(b[:ipLen], 0))
	u := b[ipLen:]
	binary.BigEndian.PutUint16(u[0:2], srcPort)
	binary.BigEndian.PutUint16(u[2:4], dstPort)
	binary.BigEndian.PutUint16(u[4:6], uint16(udpLen+len(payload)))
	copy(u[udpLen:], payload)
	// Pseudo header: source, destination, zero, protocol, UDP length.
	var pseudo uint32
	for i := 12; i < 20; i += 2 {
		pseudo += uint32(binary.BigEndian.Uint16(b[i : i+2]))
	}
	pseudo += 17 + uint32(udpLen+len(payload))
	cs := checksum(u, pseudo)
	if cs == 0 {
		cs = 0xffff
	}
	binary.BigEndian.PutUint16(u[6:8], cs)
	return b
}

// checksum is the Internet checksum of b, starting from sum.
func checksum(b []byte, sum uint32) uint16 {
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(b[i : i+2]))
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	return ^uint16(sum)
}

// parseUDP4 returns the UDP payload and ports of an IPv4 packet.
func parseUDP4(b []byte) (payload []byte, src netip.Addr, srcPort, dstPort uint16, ok bool) {
	if len(b) < 20 || b[0]>>4 != 4 || b[9] != 17 {
		return nil, src, 0, 0, false
	}
	ihl := int(b[0]&0xf) * 4
	total := int(binary.BigEndian.Uint16(b[2:4]))
	if ihl < 20 || total > len(b) || total < ihl+8 {
		return nil, src, 0, 0, false
	}
	u := b[ihl:total]
	src = netip.AddrFrom4([4]byte(b[12:16]))
	return u[8:], src, binary.BigEndian.Uint16(u[0:2]), binary.BigEndian.Uint16(u[2:4]), true
}
