package testenv

import (
	"testing"

	"github.com/virtkit/virtkit/internal/freeport"
)

// FreePorts returns a loopback port base such that base .. base+n-1 are
// all free now (a control plane wants a few consecutive ones).
func FreePorts(t testing.TB, n int) int {
	t.Helper()
	base, err := freeport.Range(n)
	if err != nil {
		t.Fatal(err)
	}
	return base
}
