// Package freeport finds free loopback TCP ports for tests and benchmarks
// that start servers (a control plane, a registry) on fixed ports.
package freeport

import (
	"fmt"
	"net"
)

// Range finds n consecutive free loopback ports and returns the first. The
// ports are free when it looks, not reserved: a caller races other
// processes, which is good enough on a test machine.
func Range(n int) (int, error) {
	for try := 0; try < 50; try++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("freeport: %w", err)
		}
		base := l.Addr().(*net.TCPAddr).Port
		l.Close()
		ok := base+n < 65535
		for i := 1; ok && i < n; i++ {
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", base+i))
			if err != nil {
				ok = false
				break
			}
			l.Close()
		}
		if ok {
			return base, nil
		}
	}
	return 0, fmt.Errorf("freeport: no range of %d free loopback ports", n)
}
