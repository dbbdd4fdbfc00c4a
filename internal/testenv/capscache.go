package testenv

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/virtkit/virtkit/virt/libvirtd"
)

// CapabilitiesCache returns the QEMU capability cache that the tests'
// libvirt daemons share, _output/cache/libvirt, once it holds a probe of
// the host's QEMU. The first caller of a run fills it with one private
// libvirtd, holding a lock that the other test processes wait on.
//
// Without it, every package that starts a daemon on a fresh checkout probed
// QEMU at the same moment into the same files; once, in CI, a define then
// failed with libvirt's "An error occurred, but the cause is unknown". A
// handler retries such a start (a node's launchers share a cache too), but
// the tests count each status write and would see the retry.
func CapabilitiesCache(t testing.TB) string {
	t.Helper()
	Integration(t)
	dir := Output(t, "cache", "libvirt")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	lock, err := os.OpenFile(Output(t, "cache", "libvirt.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	defer lock.Close()
	// Closing the file releases the lock.
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatalf("testenv: lock the capability cache: %v", err)
	}
	if probed(dir) {
		return dir
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d, err := libvirtd.Start(ctx, libvirtd.Config{Dir: Dir(t), CacheDir: dir})
	if err != nil {
		t.Fatalf("testenv: fill the capability cache: %v", err)
	}
	out, err := exec.CommandContext(ctx, "virsh", "-q", "-c", d.URI(), "domcapabilities", "--virttype", "qemu").CombinedOutput()
	if stopErr := d.Stop(context.Background()); stopErr != nil {
		t.Errorf("testenv: %v", stopErr)
	}
	if err != nil {
		t.Fatalf("testenv: fill the capability cache: virsh domcapabilities: %v: %s", err, out)
	}
	if !probed(dir) {
		t.Fatalf("testenv: fill the capability cache: no probe in %s after virsh domcapabilities", dir)
	}
	return dir
}

// probed tells whether the cache holds a probe, where a system-mode
// libvirtd keeps them (/var/cache/libvirt/qemu/capabilities).
func probed(cache string) bool {
	m, _ := filepath.Glob(filepath.Join(cache, "qemu", "capabilities", "*.xml"))
	return len(m) > 0
}
