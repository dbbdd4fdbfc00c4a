package testenv

import (
	"net"
	"testing"
)

// Serve accepts connections on ln until the test ends (ln is closed then),
// each handled by handle in a goroutine of its own and closed after it.
func Serve(t testing.TB, ln net.Listener, handle func(net.Conn)) {
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				handle(c)
			}()
		}
	}()
}
