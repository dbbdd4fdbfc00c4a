package freeport_test

import (
	"fmt"
	"net"
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
