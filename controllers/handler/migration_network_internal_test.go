package handler

import (
	"net"
	"testing"
)

func TestGlobalUnicast(t *testing.T) {
	cidr := func(s string) net.Addr {
		ip, n, err := net.ParseCIDR(s)
		if err != nil {
			t.Fatal(err)
		}
		n.IP = ip
		return n
	}
	for _, tc := range []struct {
		name  string
		addrs []net.Addr
		want  string
	}{
		{"none", nil, "<nil>"},
		{"link-local only", []net.Addr{cidr("fe80::1/64"), cidr("169.254.3.4/16")}, "<nil>"},
		{"loopback and multicast", []net.Addr{cidr("127.0.0.1/8"), &net.IPAddr{IP: net.ParseIP("ff02::1")}}, "<nil>"},
		{"first global", []net.Addr{cidr("fe80::1/64"), cidr("10.200.0.7/24"), cidr("fd00::7/64")}, "10.200.0.7"},
		{"IPv6 only", []net.Addr{cidr("fe80::1/64"), cidr("fd00::7/64")}, "fd00::7"},
		{"IPAddr", []net.Addr{&net.IPAddr{IP: net.ParseIP("192.0.2.1")}}, "192.0.2.1"},
	} {
		if got := globalUnicast(tc.addrs).String(); got != tc.want {
			t.Errorf("%s: globalUnicast(%v) = %s, want %s", tc.name, tc.addrs, got, tc.want)
		}
	}
}
