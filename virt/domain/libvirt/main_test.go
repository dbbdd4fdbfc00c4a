package libvirt_test

import (
	"testing"

	"github.com/virtkit/virtkit/internal/testenv"
)

// TestMain fails the run when a test leaves a libvirtd or guest behind.
func TestMain(m *testing.M) { testenv.Main(m) }
