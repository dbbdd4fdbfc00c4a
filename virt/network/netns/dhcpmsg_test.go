package netns

import (
	"encoding/binary"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"gotest.tools/v3/assert"

	"github.com/virtkit/virtkit/virt/network"
)

// clientMessage builds a BOOTREQUEST as a client would.
func clientMessage(msgType byte, mac net.HardwareAddr, ciaddr netip.Addr, opts ...dhcpOption) []byte {
	b := make([]byte, bootpHeaderLen)
	b[0], b[1], b[2] = 1, 1, 6
	binary.BigEndian.PutUint32(b[4:8], 0x11223344)
	if ciaddr.IsValid() {
		a := ciaddr.As4()
		copy(b[12:16], a[:])
	}
	copy(b[28:], mac)
	b = append(b, dhcpMagic[:]...)
	b = append(b, optMessageType, 1, msgType)
	for _, o := range opts {
		b = append(b, o.code, byte(len(o.data)))
		b = append(b, o.data...)
	}
	return append(b, optEnd)
}

// replyOptions decodes a reply's options into a map, for comparing.
func replyOptions(t *testing.T, b []byte) (yiaddr netip.Addr, opts map[byte][]byte) {
	t.Helper()
	assert.Assert(t, len(b) >= bootpMinLen, "reply of %d bytes", len(b))
	assert.Equal(t, b[0], byte(2))
	assert.Equal(t, binary.BigEndian.Uint32(b[4:8]), uint32(0x11223344))
	yiaddr = netip.AddrFrom4([4]byte(b[16:20]))
	opts = map[byte][]byte{}
	rest := b[bootpHeaderLen+4:]
	for len(rest) > 0 && rest[0] != optEnd {
		if rest[0] == optPad {
			rest = rest[1:]
			continue
		}
		opts[rest[0]] = append(opts[rest[0]], rest[2:2+int(rest[1])]...)
		rest = rest[2+int(rest[1]):]
	}
	return yiaddr, opts
}

func testLease(t *testing.T) *lease {
	ip := network.InterfacePlan{
		Interface: "default", MAC: "02:00:00:00:00:01", MTU: 1450, Hostname: "vm1",
		GuestIPs: []string{"10.0.2.2/24"}, Gateways: []string{"10.0.2.1"}, BridgeIPs: []string{"10.0.2.1/24"},
		DNS: network.DNS{Servers: []string{"10.96.0.10", "fd00::10"}, Search: []string{"ns1.svc.cluster.local"}},
	}
	l, err := leaseFor(&ip, time.Hour)
	assert.NilError(t, err)
	return l
}

func TestDHCPOfferAndAck(t *testing.T) {
	l := testLease(t)
	mac, _ := net.ParseMAC("02:00:00:00:00:01")
	want := map[byte][]byte{
		optMessageType: {dhcpOffer},
		optServerID:    {10, 0, 2, 1},
		optLeaseTime:   {0, 0, 0x0e, 0x10},
		optRenewalTime: {0, 0, 0x07, 0x08},
		optRebindTime:  {0, 0, 0x0c, 0x4e},
		optSubnetMask:  {255, 255, 255, 0},
		optBroadcast:   {10, 0, 2, 255},
		optRouter:      {10, 0, 2, 1},
		optDNS:         {10, 96, 0, 10},
		optDomainName:  []byte("ns1.svc.cluster.local"),
		optHostname:    []byte("vm1"),
		optMTU:         {0x05, 0xaa},
	}
	for _, step := range []struct {
		msgType, want byte
		opts          []dhcpOption
	}{
		{dhcpDiscover, dhcpOffer, nil},
		{dhcpRequest, dhcpAck, []dhcpOption{{optRequestedIP, []byte{10, 0, 2, 2}}, {optServerID, []byte{10, 0, 2, 1}}}},
	} {
		req, err := parseDHCP(clientMessage(step.msgType, mac, netip.Addr{}, step.opts...))
		assert.NilError(t, err)
		resp := l.reply(req)
		assert.Assert(t, resp != nil)
		yiaddr, opts := replyOptions(t, resp.marshal())
		assert.Equal(t, yiaddr, netip.MustParseAddr("10.0.2.2"))
		want[optMessageType] = []byte{step.want}
		if d := cmp.Diff(want, opts); d != "" {
			t.Errorf("options of the reply to %d (-want +got):\n%s", step.msgType, d)
		}
	}
}

func TestDHCPNakAndIgnore(t *testing.T) {
	l := testLease(t)
	mac, _ := net.ParseMAC("02:00:00:00:00:01")
	req, err := parseDHCP(clientMessage(dhcpRequest, mac, netip.Addr{}, dhcpOption{optRequestedIP, []byte{10, 0, 2, 9}}))
	assert.NilError(t, err)
	assert.Equal(t, l.reply(req).msgType, byte(dhcpNak))

	req, err = parseDHCP(clientMessage(dhcpRequest, mac, netip.Addr{}, dhcpOption{optRequestedIP, []byte{10, 0, 2, 2}}, dhcpOption{optServerID, []byte{10, 0, 2, 77}}))
	assert.NilError(t, err)
	assert.Assert(t, l.reply(req) == nil, "answered a request meant for another server")

	req, err = parseDHCP(clientMessage(dhcpRelease, mac, netip.MustParseAddr("10.0.2.2")))
	assert.NilError(t, err)
	assert.Assert(t, l.reply(req) == nil)

	_, err = parseDHCP([]byte{1, 2, 3})
	assert.ErrorIs(t, err, errNotDHCP)
}

func TestClasslessRoutes(t *testing.T) {
	got := classlessRoutes([]network.Route{{Dst: "10.96.0.0/12", Gateway: "10.99.0.254"}, {Dst: "192.168.1.0/24", Gateway: "10.99.0.253"}},
		[]netip.Addr{netip.MustParseAddr("10.99.0.1")})
	want := []byte{12, 10, 96, 10, 99, 0, 254, 24, 192, 168, 1, 10, 99, 0, 253, 0, 10, 99, 0, 1}
	assert.DeepEqual(t, want, got)
}

// The packet the server sends parses back, with valid IP and UDP checksums.
func TestUDP4Packet(t *testing.T) {
	payload := []byte("hello dhcp")
	pkt := udp4Packet(netip.MustParseAddr("10.0.2.1"), netip.MustParseAddr("255.255.255.255"), 67, 68, payload)
	assert.Equal(t, checksum(pkt[:20], 0), uint16(0), "IP header checksum")
	var pseudo uint32
	for i := 12; i < 20; i += 2 {
		pseudo += uint32(binary.BigEndian.Uint16(pkt[i : i+2]))
	}
	pseudo += 17 + uint32(len(pkt)-20)
	assert.Equal(t, checksum(pkt[20:], pseudo), uint16(0), "UDP checksum")
	got, src, sp, dp, ok := parseUDP4(pkt)
	assert.Assert(t, ok)
	assert.DeepEqual(t, got, payload)
	assert.Equal(t, src, netip.MustParseAddr("10.0.2.1"))
	assert.Equal(t, sp, uint16(67))
	assert.Equal(t, dp, uint16(68))
}
