package freeport_test

import (
	"fmt"
	"net"
	"os"
	"testing"

	"github.com/virtkit/virtkit/internal/freeport"
)

func TestRangeIsFree(t *testing.T) {
	base, err := freeport.Range(3)
	if err != nil {
		t.Fatal(err)
	}
	for p := base; p < base+3; p++ {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			t.Fatalf("port %d of the range: %v", p, err)
		}
		l.Close()
	}
}

// The ports come from below the kernel's ephemeral range, where no
// outgoing connection can take them before the caller binds them.
func TestRangeIsBelowTheEphemeralRange(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		t.Fatalf("the kernel's ephemeral range (Linux, where virtkit's tests run): %v", err)
	}
	var low, high int
	if _, err := fmt.Sscan(string(b), &low, &high); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		base, err := freeport.Range(5)
		if err != nil {
			t.Fatal(err)
		}
		if base < 20000 || base+5 > low {
			t.Fatalf("Range(5) = %d..%d, want within 20000..%d", base, base+4, low-1)
		}
	}
}
