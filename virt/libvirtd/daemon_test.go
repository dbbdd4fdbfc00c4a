package libvirtd_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/virtkit/virtkit/internal/linuxproc"
	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/virt/libvirtd"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// A daemon starts in its own mount namespace, answers on its socket, keeps its
// files in its folder, and leaves no process behind when stopped.
func TestStartStop(t *testing.T) {
	testenv.Integration(t)
	dir := testenv.Dir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := libvirtd.Start(ctx, libvirtd.Config{Dir: dir, CacheDir: testenv.CapabilitiesCache(t)})
	assert.NilError(t, err)
	t.Cleanup(func() { _ = d.Stop(context.Background()) }) // when an assertion stops the test early

	c, err := net.Dial("unix", d.Config().Paths().Socket)
	assert.NilError(t, err, "the socket answers")
	c.Close()

	hostNS, err := linuxproc.MountNamespaceOf(os.Getpid())
	assert.NilError(t, err)
	assert.Assert(t, d.MountNamespace() != hostNS, "libvirtd runs in a private mount namespace")
	// libvirtd itself runs in the namespace (with, at times, a short-lived
	// helper it spawns during start-up, such as dmidecode).
	procs, err := d.Processes()
	assert.NilError(t, err)
	found := false
	for _, p := range procs {
		found = found || p.PID == d.PID()
	}
	assert.Assert(t, found, "libvirtd (pid %d) not among the namespace's processes %v", d.PID(), procs)

	conf, err := os.ReadFile(filepath.Join(dir, "etc", "libvirtd.conf"))
	assert.NilError(t, err)
	assert.Assert(t, strings.Contains(string(conf), d.Config().HostUUID))

	// Only the default drivers were loaded: each driver keeps state under
	// run/, made when libvirtd initialises it, just after its socket opens.
	for _, loaded := range []string{"qemu", "secrets"} {
		testenv.EventuallyEvery(testenv.Within(t, 10*time.Second), t, 10*time.Millisecond, "driver state folder "+loaded, func() (bool, string) {
			_, err := os.Stat(filepath.Join(dir, "run", loaded))
			return err == nil, fmt.Sprint(err)
		})
	}
	for _, skipped := range []string{"network", "nodedev", "storage", "nwfilter", "interface"} {
		_, err := os.Stat(filepath.Join(dir, "run", skipped))
		assert.Assert(t, os.IsNotExist(err), "driver %s was loaded", skipped)
	}

	// The host's /run/libvirt is not where the daemon's socket went.
	_, err = os.Stat("/run/libvirt/libvirt-sock")
	assert.Assert(t, os.IsNotExist(err), "the host's libvirt paths are untouched")

	assert.NilError(t, d.Stop(ctx))
	<-d.Done()
	left, err := linuxproc.List(linuxproc.SeesMountFrom(d.Config().Dir))
	assert.NilError(t, err)
	assert.Equal(t, len(left), 0, "left behind: %v", left)
}

// Stopping a daemon that already died touches no other daemon, even one
// whose namespace took the dead one's inode (the kernel hands the inode of
// a namespace that ended to the next one): the namespace is held open from
// Start to a clean Stop.
func TestStopAfterDeathSparesOthers(t *testing.T) {
	testenv.Integration(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cache := testenv.CapabilitiesCache(t)
	dead, err := libvirtd.Start(ctx, libvirtd.Config{Dir: testenv.Dir(t), CacheDir: cache})
	assert.NilError(t, err)
	t.Cleanup(func() { _ = dead.Stop(context.Background()) })
	assert.NilError(t, syscall.Kill(dead.PID(), syscall.SIGKILL))
	<-dead.Done()

	other, err := libvirtd.Start(ctx, libvirtd.Config{Dir: testenv.Dir(t), CacheDir: cache})
	assert.NilError(t, err)
	t.Cleanup(func() { _ = other.Stop(context.Background()) })
	t.Logf("the second daemon's namespace reuses the first's inode: %t", other.MountNamespace() == dead.MountNamespace())

	assert.NilError(t, dead.Stop(ctx))
	select {
	case <-other.Done():
		t.Fatalf("stopping the dead daemon ended the other one: %v", other.Err())
	case <-time.After(time.Second):
	}
	c, err := net.Dial("unix", other.Config().Paths().Socket)
	assert.NilError(t, err, "the other daemon still answers")
	c.Close()
	assert.NilError(t, other.Stop(ctx))
}

// A daemon that cannot start reports why and where its log is, and leaves
// nothing running.
func TestStartFailureNamesTheLog(t *testing.T) {
	testenv.Integration(t)
	dir := testenv.Dir(t)
	// /bin/false stands in for a libvirtd that exits during start-up.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := libvirtd.Start(ctx, libvirtd.Config{Dir: dir, Binary: "/bin/false"})
	assert.ErrorContains(t, err, "exited during start-up")
	assert.ErrorContains(t, err, filepath.Join(dir, "log", "libvirtd.stderr"))
}

func TestStartRejectsBadConfig(t *testing.T) {
	_, err := libvirtd.Start(context.Background(), libvirtd.Config{Dir: "relative"})
	assert.ErrorContains(t, err, "Config.Dir")
	_, err = libvirtd.Start(context.Background(), libvirtd.Config{Dir: "/tmp/vk-none", Binary: "no-such-libvirtd"})
	assert.ErrorContains(t, err, "Config.Binary")
	_, statErr := os.Stat("/tmp/vk-none")
	assert.Assert(t, os.IsNotExist(statErr), "nothing created for a rejected config")
}

// Several daemons run side by side, each with its own socket, host UUID and
// pid file (libvirtd's default pid file is host-wide).
func TestTwoDaemonsAtOnce(t *testing.T) {
	testenv.Integration(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var ds [2]*libvirtd.Daemon
	for i := range ds {
		d, err := libvirtd.Start(ctx, libvirtd.Config{Dir: testenv.Dir(t), CacheDir: testenv.CapabilitiesCache(t)})
		assert.NilError(t, err)
		defer func() { assert.Check(t, d.Stop(ctx)) }()
		ds[i] = d
		pid, err := os.ReadFile(filepath.Join(d.Config().Dir, "run", "libvirtd.pid"))
		assert.NilError(t, err)
		assert.Equal(t, strings.TrimSpace(string(pid)), strconv.Itoa(d.PID()))
	}
	assert.Assert(t, ds[0].Config().HostUUID != ds[1].Config().HostUUID)
	for _, d := range ds {
		c, err := net.Dial("unix", d.Config().Paths().Socket)
		assert.NilError(t, err)
		c.Close()
	}
}

// A session daemon, as a launcher that is not root runs it: the qemu user
// with no capability, in the caller's mount namespace, its files in its
// folder (qemu.conf where a session daemon reads it, the shared capability
// cache linked in), answering on its socket; stopped, nothing of it is left.
func TestSessionDaemon(t *testing.T) {
	testenv.Integration(t)
	dir, cache := filepath.Join(testenv.Dir(t), "lv"), testenv.Dir(t)
	qemu := libvirtd.Owner{UID: 107, GID: 107}
	assert.NilError(t, os.Chown(cache, qemu.UID, qemu.GID))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := libvirtd.Start(ctx, libvirtd.Config{Dir: dir, Session: true, CacheDir: cache}, libvirtd.WithUser(qemu))
	assert.NilError(t, err)
	t.Cleanup(func() { _ = d.Stop(context.Background()) })

	sec, err := linuxproc.SecurityOf(d.PID())
	assert.NilError(t, err)
	assert.Check(t, sec.UID == qemu.UID && sec.Effective == 0, "libvirtd: uid %d, effective capabilities %v", sec.UID, linuxproc.CapabilityNames(sec.Effective))
	hostNS, err := linuxproc.MountNamespaceOf(os.Getpid())
	assert.NilError(t, err)
	ns, err := linuxproc.MountNamespaceOf(d.PID())
	assert.NilError(t, err)
	assert.Check(t, ns == hostNS && d.MountNamespace() == 0, "a session daemon needs no mount namespace of its own")

	c, err := net.Dial("unix", d.Config().Paths().Socket)
	assert.NilError(t, err, "the socket answers")
	c.Close()
	_, err = os.Stat(filepath.Join(dir, "etc", "libvirt", "qemu.conf"))
	assert.NilError(t, err, "qemu.conf where a session daemon reads it")
	link, err := os.Readlink(filepath.Join(dir, "cache", "libvirt", "qemu", "cache"))
	assert.Check(t, err == nil && link == cache, "the shared capability cache: %q, %v", link, err)
	// The QEMU driver keeps its runtime state below the folder, not in the
	// user's /run.
	testenv.EventuallyEvery(testenv.Within(t, 10*time.Second), t, 10*time.Millisecond, "the QEMU driver's runtime folder", func() (bool, string) {
		_, err := os.Stat(filepath.Join(dir, "run", "libvirt", "qemu", "run"))
		return err == nil, fmt.Sprint(err)
	})
	procs, err := d.Processes()
	assert.NilError(t, err)
	found := false
	for _, p := range procs {
		found = found || p.PID == d.PID()
	}
	assert.Assert(t, found, "libvirtd (pid %d) not among its processes %v", d.PID(), procs)

	assert.NilError(t, d.Stop(ctx))
	procs, err = linuxproc.List(linuxproc.NamesPath(dir))
	assert.NilError(t, err)
	assert.Check(t, len(procs) == 0, "left running: %v", procs)
	assert.Check(t, !linuxproc.Alive(d.PID()), "libvirtd still runs")
}
