package cluster

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/local/node"
	"github.com/virtkit/virtkit/virt/launcher/contract"
)

// The probe that warms the cache runs as the launcher pods' compute
// container does (controllers/vmi), and sees the cache where they do.
func TestCapabilityProbeRunsAsALauncher(t *testing.T) {
	got := capabilityProbe("/opt/bin", "/data/cache/libvirt", "/tmp/out")
	want := node.OneOff{
		Path:    "/opt/bin/virt-launcher",
		Args:    []string{"--probe-host-cpu", "/tmp/out", "--virt-type", "qemu", "--libvirt-cache-dir", "/var/cache/virtkit/libvirt"},
		User:    &node.Identity{UID: contract.QEMUUser, GID: contract.QEMUGroup, Groups: []uint32{contract.QEMUGroup}, NoNewPrivs: true},
		Mounts:  []node.Mount{{Source: "/data/cache/libvirt", Target: "/var/cache/virtkit/libvirt"}},
		BinDirs: []string{"/opt/bin"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("probe (-want +got):\n%s", diff)
	}
}

// warmCapabilitiesCache leaves libvirt's QEMU capability probe in a cache
// prepared as virt-local prepares its own, through the real runner.
func TestWarmCapabilitiesCacheFillsIt(t *testing.T) {
	testenv.Integration(t)
	dir := filepath.Join(t.TempDir(), "cache", "libvirt")
	if err := prepareCapabilitiesCache(dir); err != nil {
		t.Fatal(err)
	}
	runner := node.NewHostRunner()
	defer runner.Close()
	ctx, cancel := context.WithTimeout(context.Background(), warmTimeout)
	defer cancel()
	if err := warmCapabilitiesCache(ctx, runner, testenv.Output(t, "bin"), dir); err != nil {
		t.Fatal(err)
	}
	docs, err := filepath.Glob(filepath.Join(dir, "capabilities", "*.xml"))
	if err != nil || len(docs) == 0 {
		t.Fatalf("capability documents in %s: %v (%v)", dir, docs, err)
	}
}
