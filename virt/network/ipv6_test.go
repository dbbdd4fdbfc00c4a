package network

import (
	"net"
	"net/netip"
	"testing"
)

func TestEUI64(t *testing.T) {
	for _, tc := range []struct{ mac, want string }{
		{"02:a7:91:b5:03:c8", "fd10:0:2:0:a7:91ff:feb5:3c8"}, // locally administered: U/L bit cleared
		{"52:54:00:12:34:56", "fd10:0:2:0:5054:ff:fe12:3456"},
		{"00:00:00:00:00:01", "fd10:0:2:0:200:ff:fe00:1"}, // universal: U/L bit set
	} {
		mac, _ := net.ParseMAC(tc.mac)
		if got := eui64(netip.MustParsePrefix("fd10:0:2::/64"), mac); got.String() != tc.want {
			t.Errorf("eui64(%s) = %s, want %s", tc.mac, got, tc.want)
		}
	}
}
