package netns

import (
	"bytes"
	"encoding/binary"
	"net"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv6"

	"github.com/virtkit/virtkit/virt/network"
)

// FuzzDHCPAnswer feeds frames a guest could send to the DHCP server's
// reading of them (IPv4, UDP, BOOTREQUEST, options). Whatever the bytes, it
// returns; a frame it answers came from the guest's MAC to port 67, and the
// answer is a well-formed BOOTREPLY in a UDP packet from port 67 to 68 that
// carries the request's transaction ID and a message type. Run with
//
//	go test ./virt/network/netns/ -run '^$' -fuzz FuzzDHCPAnswer -fuzztime 60s
func FuzzDHCPAnswer(f *testing.F) {
	mac, _ := net.ParseMAC("02:00:00:00:00:01")
	ip := network.InterfacePlan{
		Interface: "default", MAC: mac.String(), MTU: 1450, Hostname: "vm1",
		GuestIPs: []string{"10.0.2.2/24"}, Gateways: []string{"10.0.2.1"}, BridgeIPs: []string{"10.0.2.1/24"},
		Routes: []network.Route{{Dst: "192.168.7.0/24", Gateway: "10.0.2.1"}},
		DNS:    network.DNS{Servers: []string{"10.96.0.10"}, Search: []string{"ns1.svc.cluster.local", "svc.cluster.local"}},
	}
	l, err := leaseFor(&ip, time.Hour)
	if err != nil {
		f.Fatal(err)
	}
	frame := func(b []byte) []byte {
		return udp4Packet(netip.IPv4Unspecified(), netip.AddrFrom4([4]byte{255, 255, 255, 255}), 68, 67, b)
	}
	f.Add(frame(clientMessage(dhcpDiscover, mac, netip.Addr{})))
	f.Add(frame(clientMessage(dhcpRequest, mac, netip.Addr{}, dhcpOption{optRequestedIP, []byte{10, 0, 2, 2}}, dhcpOption{optServerID, []byte{10, 0, 2, 1}})))
	f.Add(frame(clientMessage(dhcpRequest, mac, netip.MustParseAddr("10.0.2.2"))))
	f.Add(frame(clientMessage(dhcpRequest, mac, netip.Addr{}, dhcpOption{optRequestedIP, []byte{10, 0, 2, 9}})))
	f.Add(frame(clientMessage(dhcpInform, mac, netip.MustParseAddr("10.0.2.2"))))
	f.Add(frame(clientMessage(dhcpRelease, mac, netip.MustParseAddr("10.0.2.2"))))
	f.Add(frame(append(clientMessage(dhcpDiscover, mac, netip.Addr{})[:bootpHeaderLen+4], optPad, optPad, optMessageType, 9)))
	f.Fuzz(func(t *testing.T, pkt []byte) {
		resp, out := l.answer(pkt, mac)
		if resp == nil {
			if out != nil {
				t.Fatalf("a packet without a reply: %x", out)
			}
			return
		}
		in, _, _, dport, ok := parseUDP4(pkt)
		if !ok || dport != 67 || !bytes.Equal(in[28:34], mac) {
			t.Fatalf("answered a frame not to port 67 from %s: %x", mac, pkt)
		}
		payload, src, sport, dport, ok := parseUDP4(out)
		if !ok || sport != 67 || dport != 68 || src != l.serverID {
			t.Fatalf("reply packet from %s:%d to port %d (parsed %t)", src, sport, dport, ok)
		}
		if len(payload) < bootpMinLen || payload[0] != 2 {
			t.Fatalf("reply of %d bytes, op %d", len(payload), payload[0])
		}
		if got, want := binary.BigEndian.Uint32(payload[4:8]), binary.BigEndian.Uint32(in[4:8]); got != want {
			t.Errorf("reply xid %#x, want the request's %#x", got, want)
		}
		opts := payload[bootpHeaderLen+4:]
		var msgType byte
		for len(opts) > 0 && opts[0] != optEnd {
			if opts[0] == optPad {
				opts = opts[1:]
				continue
			}
			if len(opts) < 2 || len(opts) < 2+int(opts[1]) {
				t.Fatalf("reply options overrun the message: %x", payload)
			}
			if opts[0] == optMessageType && opts[1] == 1 {
				msgType = opts[2]
			}
			opts = opts[2+int(opts[1]):]
		}
		if len(opts) == 0 {
			t.Error("reply options without an end")
		}
		if msgType != resp.msgType || (msgType != dhcpOffer && msgType != dhcpAck && msgType != dhcpNak) {
			t.Errorf("reply message type %d (resp %d)", msgType, resp.msgType)
		}
	})
}

// FuzzRouterSolicit checks the router advertiser's test of a received
// frame against an independent decoder (golang.org/x/net's ipv6 and icmp):
// whatever the bytes, a frame taken for a router solicitation is an IPv6
// packet whose next header is ICMPv6 and whose message is a router
// solicitation of code 0. Run with
//
//	go test ./virt/network/netns/ -run '^$' -fuzz FuzzRouterSolicit -fuzztime 60s
func FuzzRouterSolicit(f *testing.F) {
	src, dst := netip.MustParseAddr("fe80::2"), netip.MustParseAddr("ff02::2")
	f.Add(ipv6Packet(src, dst, []byte{133, 0, 0, 0, 0, 0, 0, 0}))
	f.Add(ipv6Packet(src, dst, []byte{133, 0, 0, 0, 0, 0, 0, 0, 1, 1, 2, 0, 0, 0, 0, 2}))
	f.Add(ipv6Packet(src, dst, routerAdvert{Prefix: netip.MustParsePrefix("fd10:0:2::/64"), Lifetime: 1800}.marshal(src, dst)))
	f.Add(ipv6Packet(src, dst, []byte{135, 0, 0, 0}))
	f.Fuzz(func(t *testing.T, pkt []byte) {
		if !isRouterSolicit(pkt) {
			return
		}
		h, err := ipv6.ParseHeader(pkt)
		if err != nil || h.Version != 6 || h.NextHeader != 58 {
			t.Fatalf("taken for a solicitation, not ICMPv6 over IPv6 (%v): %x", err, pkt[:40])
		}
		m, err := icmp.ParseMessage(58, pkt[40:])
		if err != nil || m.Type != ipv6.ICMPTypeRouterSolicitation || m.Code != 0 {
			t.Fatalf("taken for a solicitation: ICMPv6 %v code %v (%v)", m.Type, m.Code, err)
		}
	})
}
