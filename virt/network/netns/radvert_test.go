package netns

import (
	"bytes"
	"encoding/binary"
	"net"
	"net/netip"
	"testing"
)

func TestRouterAdvertEncoding(t *testing.T) {
	mac, _ := net.ParseMAC("02:11:22:33:44:55")
	ra := routerAdvert{RouterMAC: mac, Prefix: netip.MustParsePrefix("fd10:0:2::/64"), MTU: 1450, Lifetime: 1800}
	src, dst := netip.MustParseAddr("fe80::1"), netip.MustParseAddr("ff02::1")
	b := ra.marshal(src, dst)
	want := []byte{
		134, 0, 0, 0, // type RA, code, checksum (checked below)
		64, 0x00, 0x07, 0x08, // hop limit, M=O=0, router lifetime 1800
		0, 0, 0, 0, 0, 0, 0, 0, // reachable, retrans
		1, 1, 0x02, 0x11, 0x22, 0x33, 0x44, 0x55, // source link-layer address
		5, 1, 0, 0, 0, 0, 0x05, 0xaa, // MTU 1450
		3, 4, 64, 0xc0, // prefix information, /64, on-link + autonomous
		0, 0x01, 0x51, 0x80, // valid 86400
		0, 0, 0x38, 0x40, // preferred 14400
		0, 0, 0, 0,
		0xfd, 0x10, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	}
	got := bytes.Clone(b)
	got[2], got[3] = 0, 0
	if !bytes.Equal(got, want) {
		t.Fatalf("RA\n got %x\nwant %x", got, want)
	}
	// A correct checksum makes the sum over pseudo-header and message 0xffff.
	if c := icmp6Checksum(src, dst, b); c != 0 {
		t.Errorf("checksum does not verify: %#04x", c)
	}
	if binary.BigEndian.Uint16(b[2:]) == 0 {
		t.Error("no checksum")
	}

	pkt := ipv6Packet(src, dst, b)
	if len(pkt) != 40+len(b) || pkt[0] != 0x60 || pkt[6] != 58 || pkt[7] != 255 ||
		int(binary.BigEndian.Uint16(pkt[4:])) != len(b) || !bytes.Equal(pkt[8:24], src.AsSlice()) || !bytes.Equal(pkt[24:40], dst.AsSlice()) {
		t.Errorf("IPv6 header %x", pkt[:40])
	}
	if isRouterSolicit(pkt) {
		t.Error("an advertisement taken for a solicitation")
	}
	rs := ipv6Packet(netip.MustParseAddr("fe80::2"), netip.MustParseAddr("ff02::2"), []byte{133, 0, 0, 0, 0, 0, 0, 0})
	if !isRouterSolicit(rs) {
		t.Error("a solicitation not recognized")
	}

	noMTU := routerAdvert{Prefix: ra.Prefix, Lifetime: 1800}.marshal(src, dst)
	if len(noMTU) != 16+32 {
		t.Errorf("RA without MAC and MTU is %d bytes, want 48", len(noMTU))
	}
}
