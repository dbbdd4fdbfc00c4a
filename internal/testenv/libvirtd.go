package testenv

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/virtkit/virtkit/internal/linuxproc"
	"github.com/virtkit/virtkit/virt/libvirtd"
)

// Libvirtd starts a private libvirtd for the test in a folder of its own and
// stops it when the test ends, failing the test if any process of its
// namespace (a guest, a helper) outlives the stop. QEMU's capability probe is
// cached in _output/cache/libvirt across tests and runs.
func Libvirtd(t testing.TB) *libvirtd.Daemon {
	t.Helper()
	Integration(t)
	cfg := libvirtd.Config{
		Dir:      Dir(t),
		CacheDir: CapabilitiesCache(t),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := libvirtd.Start(ctx, cfg, libvirtd.WithEnv(OwnerEnv+"="+strconv.Itoa(os.Getpid())))
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if err := d.Stop(ctx); err != nil {
			t.Errorf("testenv: %v", err)
		}
		left, err := linuxproc.List(linuxproc.SeesMountFrom(cfg.Dir))
		if err != nil {
			t.Errorf("testenv: %v", err)
		}
		for _, p := range left {
			t.Errorf("testenv: left behind by libvirtd in %s: %s", cfg.Dir, p)
		}
	})
	return d
}
