// Package e2e runs virtkit end to end on virt-local (local/cluster): a real
// control plane, virt-api, the controllers, a local node running launcher
// pods as processes, its handler, and the test guest under software
// emulation.
package e2e

import (
	"testing"

	"github.com/virtkit/virtkit/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }
