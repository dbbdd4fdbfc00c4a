package testenv

import (
	"fmt"
	"net"
	"testing"
)

// FreePorts returns a loopback port base such that base .. base+n-1 are
// all free now (a control plane wants a few consecutive ones).
func FreePorts(t testing.TB, n int) int {
	t.Helper()
	for try := 0; try < 50; try++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
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
			return base
		}
	}
	t.Fatal("testenv: no range of free loopback ports")
	return 0
}
