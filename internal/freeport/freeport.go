// Package freeport finds free loopback TCP ports for tests and benchmarks
// that start servers (a control plane, a registry) on fixed ports.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// Ports below the kernel's ephemeral range are never handed out to an
// outgoing connection or a listener on port 0, so a port found free there
// stays free until the caller binds it, unless another caller picks the
// same one: the range is chosen at random to make that unlikely. It starts
// at 20000, above the ports Kubernetes' components listen on by default
// (10250 and its neighbours), which a node started later would take. A port of
// the ephemeral range, as port 0 gives, can be taken in between by any
// process's connection, which is what failed tests that bind seconds later.
const (
	lowest            = 20000
	ephemeralRangeSys = "/proc/sys/net/ipv4/ip_local_port_range"
	// defaultEphemeralLow is the kernel's default when the file cannot be read.
	defaultEphemeralLow = 32768
)

// Range finds n consecutive free loopback ports below the ephemeral range
// and returns the first. The ports are free when it looks, not reserved.
func Range(n int) (int, error) {
	high := ephemeralLow() - n
	if n < 1 || high <= lowest {
		return 0, fmt.Errorf("freeport: no room for %d ports below the ephemeral range", n)
	}
	for try := 0; try < 100; try++ {
		base := lowest + rand.IntN(high-lowest)
		if free(base, n) {
			return base, nil
		}
	}
	return 0, fmt.Errorf("freeport: no range of %d free loopback ports", n)
}

func free(base, n int) bool {
	for p := base; p < base+n; p++ {
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			return false
		}
		l.Close()
	}
	return true
}

// ephemeralLow is the first port of the kernel's ephemeral range.
func ephemeralLow() int {
	b, err := os.ReadFile(ephemeralRangeSys)
	if err != nil {
		return defaultEphemeralLow
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return defaultEphemeralLow
	}
	low, err := strconv.Atoi(f[0])
	if err != nil || low <= lowest {
		return defaultEphemeralLow
	}
	return low
}
