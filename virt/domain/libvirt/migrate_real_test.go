package libvirt_test

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	virtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/internal/testguest"
	"github.com/virtkit/virtkit/virt/domain"
	"github.com/virtkit/virtkit/virt/domain/libvirt"
	"github.com/virtkit/virtkit/virt/libvirtd"
	"github.com/virtkit/virtkit/virt/migrate"
)

// hosts are two private libvirtd on this machine, each with its own
// folder, socket and host UUID, and a Manager on each: the two launchers of
// a migration. The guest runs on src and moves to dst.
type hosts struct {
	srcD, dstD *libvirtd.Daemon
	src, dst   *libvirt.Manager
	dir        string
	guest      testguest.Artifacts
}

func twoHosts(t *testing.T) *hosts {
	t.Helper()
	h := &hosts{srcD: testenv.Libvirtd(t), dstD: testenv.Libvirtd(t), dir: testenv.Dir(t), guest: testenv.Guest(t)}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var err error
	h.src, err = libvirt.New(ctx, h.srcD.URI())
	assert.NilError(t, err)
	t.Cleanup(func() { h.src.Close() })
	h.dst, err = libvirt.New(ctx, h.dstD.URI())
	assert.NilError(t, err)
	t.Cleanup(func() { h.dst.Close() })
	return h
}

// destination is the destination as the source's daemon reaches it: the
// remote driver over the other daemon's unix socket (a plain qemu:///
// URI would name the source daemon itself), the memory stream on a free
// loopback port.
func (h *hosts) destination(t *testing.T) migrate.Destination {
	return migrate.Destination{
		URI:           "qemu+unix:///system?socket=" + h.dstD.Config().Paths().Socket,
		MigrationURI:  "tcp://127.0.0.1:" + strconv.Itoa(testenv.FreePorts(t, 1)),
		ListenAddress: "127.0.0.1",
		Host:          h.dst,
	}
}

// destinationFor is the destination of the domain name: the guest writes
// its console log there to a file of its own.
func (h *hosts) destinationFor(t *testing.T, name string) migrate.Destination {
	dest := h.destination(t)
	dest.EditXML = func(doc *libvirtxml.Domain) error {
		doc.Devices.Serials[0].Source.File.Path = h.log(name, "dst")
		return nil
	}
	return dest
}

// migrating is the set-up most migration tests share: two hosts, the test
// guest booted as name on the source, and its destination.
func migrating(t *testing.T, name string) (*hosts, migrate.Destination) {
	t.Helper()
	h := twoHosts(t)
	h.boot(t, name)
	return h, h.destinationFor(t, name)
}

func (h *hosts) log(name, side string) string { return filepath.Join(h.dir, name+"."+side+".log") }

// boot defines and starts the test guest (256 MiB, TCG) on the source,
// with data disks as given, and waits until it is ready.
func (h *hosts) boot(t *testing.T, name string, disks ...libvirtxml.DomainDisk) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	doc := testguest.Domain(name, h.guest, 256, h.log(name, "src"))
	doc.Devices.Disks = disks
	assert.NilError(t, h.src.Define(ctx, doc))
	assert.NilError(t, h.src.Start(ctx, name, domain.StartOptions{}))
	testenv.WaitConsole(t, ctx, h.log(name, "src"), regexp.MustCompile(`^`+testguest.ReadyMarker))
	// Whatever the test leaves running is ended when its daemon stops.
}

var heartbeat = regexp.MustCompile(`^` + testguest.HeartbeatLine + ` (\d+)$`)

// beat waits for a heartbeat line with a count above after in a console
// log and returns the highest count.
func beat(t *testing.T, path string, after int) int {
	t.Helper()
	n := 0
	testenv.Eventually(testenv.Within(t, 30*time.Second), t, fmt.Sprintf("a heartbeat above %d in %s", after, path), func() (bool, string) {
		n = lastBeat(t, path)
		return n > after, "last lines:\n" + testguest.Tail(path, 10)
	})
	return n
}

// lastBeat is the highest heartbeat count in a console log so far.
func lastBeat(t *testing.T, path string) int {
	t.Helper()
	last := 0
	for _, l := range strings.Split(testguest.Tail(path, 1000), "\n") {
		if m := heartbeat.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
			n, _ := strconv.Atoi(m[1])
			last = max(last, n)
		}
	}
	return last
}

func qemuImg(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("qemu-img", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("qemu-img %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func names(t *testing.T, m *libvirt.Manager) []string {
	t.Helper()
	list, err := m.List(context.Background())
	assert.NilError(t, err)
	var out []string
	for _, i := range list {
		out = append(out, i.Name+" "+i.State.String())
	}
	return out
}

// A live migration of the running test guest between two libvirtd: the
// guest keeps counting its heartbeat on the destination, its data disk's
// overlay is copied incrementally (each side has its own overlay of one
// base image, as launcher pods have of a container disk), and nothing of
// it is left on the source.
func TestRealMigration(t *testing.T) {
	h := twoHosts(t)
	const name = "mig-live"
	base := filepath.Join(h.dir, "base.qcow2")
	qemuImg(t, "create", "-q", "-f", "qcow2", base, "16M")
	srcDisk, dstDisk := filepath.Join(h.dir, "src-data.qcow2"), filepath.Join(h.dir, "dst-data.qcow2")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	assert.NilError(t, testguest.CreateOverlay(ctx, base, srcDisk))
	assert.NilError(t, testguest.CreateOverlay(ctx, base, dstDisk))
	h.boot(t, name, libvirtxml.DomainDisk{
		Device: "disk",
		Driver: &libvirtxml.DomainDiskDriver{Name: "qemu", Type: "qcow2"},
		Source: &libvirtxml.DomainDiskSource{File: &libvirtxml.DomainDiskSourceFile{File: srcDisk}},
		Target: &libvirtxml.DomainDiskTarget{Dev: "vda", Bus: "virtio"},
	})
	testenv.WaitConsole(t, ctx, h.log(name, "src"), regexp.MustCompile(`^VIRTKIT-DISK vda previous=none wrote=1 readback=ok`))
	before := beat(t, h.log(name, "src"), 0)

	dest := h.destinationFor(t, name)
	ownLog := dest.EditXML
	dest.EditXML = func(doc *libvirtxml.Domain) error {
		// The destination uses its own overlay.
		doc.Devices.Disks[0].Source.File.File = dstDisk
		return ownLog(doc)
	}
	var polls []migrate.Progress
	res, err := migrate.Run(ctx, h.src, name, dest, migrate.DefaultConfig(),
		migrate.WithCopyStorage(domain.CopyIncremental),
		migrate.WithPollInterval(100*time.Millisecond),
		migrate.WithProgress(func(p migrate.Progress) { polls = append(polls, p) }))
	assert.NilError(t, err)
	var disk uint64
	for _, p := range polls {
		disk = max(disk, p.Stats.DiskTotal)
	}
	t.Logf("migrated in %s (libvirt's job: %s), downtime %s, mode %s, %d of %d MiB of memory moved, disk copy %d KiB, %d iterations, %d polls",
		res.Duration, res.Stats.Elapsed, res.Downtime, res.Mode, res.DataProcessed>>20, res.DataTotal>>20,
		disk>>10, res.Iterations, len(polls))
	assert.Equal(t, res.Mode, virtv1.MigrationPreCopy)
	assert.Equal(t, res.Stats.Type, domain.JobCompleted, "the destination's statistics of the completed migration")
	assert.Assert(t, res.Downtime > 0, "libvirt reports the downtime: %+v", res.Stats)
	assert.Assert(t, res.DataProcessed > 0, "memory moved: %+v", res.Stats)
	assert.Assert(t, len(polls) > 0, "progress was reported")

	// On the destination, running and persistent; gone from the source.
	st, reason, err := h.dst.State(ctx, name)
	assert.NilError(t, err)
	assert.Equal(t, st.String()+"/"+domain.ReasonString(st, reason), "running/migrated")
	assert.DeepEqual(t, names(t, h.dst), []string{name + " running"})
	assert.Equal(t, len(names(t, h.src)), 0, "the source has no domain left: %v", names(t, h.src))
	list, _ := h.dst.List(ctx)
	assert.Assert(t, list[0].Persistent)

	// The guest lives on: its heartbeat goes on from where it was.
	after := beat(t, h.log(name, "dst"), before)
	assert.Assert(t, after > before, "heartbeat %d on the destination after %d on the source", after, before)

	// What the guest wrote to its overlay on the source is in the
	// destination's overlay, which started empty.
	assert.Assert(t, strings.Contains(qemuImg(t, "compare", "-U", srcDisk, dstDisk), "Images are identical"))
	cmp := exec.Command("qemu-img", "compare", "-U", base, dstDisk)
	out, _ := cmp.CombinedOutput()
	assert.Assert(t, strings.Contains(string(out), "Content mismatch"), "the destination's overlay holds the guest's write: %s", out)

	assert.NilError(t, h.dst.Destroy(ctx, name))
}

// With 1 MiB/s and a 3 s completion timeout the migration cannot complete:
// Run aborts it; the guest keeps running on the source (its heartbeat goes
// on) and the destination has no domain.
func TestRealMigrationAbortAtCompletionTimeout(t *testing.T) {
	const name = "mig-abort"
	h, dest := migrating(t, name)
	cfg := migrate.DefaultConfig()
	cfg.BandwidthPerMigration = 1 << 20
	cfg.CompletionTimeoutPerGiB = 3 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var fastest uint64
	res, err := migrate.Run(ctx, h.src, name, dest, cfg,
		migrate.WithPollInterval(200*time.Millisecond),
		migrate.WithProgress(func(p migrate.Progress) { fastest = max(fastest, p.Stats.MemoryBytesPerSecond) }))
	t.Logf("aborted after %s: %v (%d of %d MiB moved)", res.Duration, err, res.DataProcessed>>20, res.DataTotal>>20)
	assert.Assert(t, errors.Is(err, migrate.ErrCompletionTimeout), err)
	assert.Equal(t, res.CompletionTimeout, 3*time.Second, "256 MiB counts as one GB")
	assert.Assert(t, res.Duration >= 3*time.Second && res.Duration < 30*time.Second, res.Duration)
	assert.Assert(t, fastest <= 2<<20, "the 1 MiB/s limit held: %d bytes/s", fastest)

	st, _, err := h.src.State(ctx, name)
	assert.NilError(t, err)
	assert.Equal(t, st, domain.StateRunning)
	before := lastBeat(t, h.log(name, "src"))
	assert.Assert(t, beat(t, h.log(name, "src"), before) > before, "the guest goes on on the source")
	assert.Equal(t, len(names(t, h.dst)), 0, "the destination has no domain: %v", names(t, h.dst))
	assert.Assert(t, !res.CleanedTarget, "libvirt's destination removed its incoming domain itself")
	assert.NilError(t, h.src.Destroy(ctx, name))
}

// Lifting the bandwidth limit while the migration runs: started at 1 MiB/s
// with a 20 s completion timeout, which at that rate it could not meet, it
// completes once the limit is lifted at the first poll.
func TestRealMigrationBandwidthLiftedOnTheFly(t *testing.T) {
	const name = "mig-lift"
	h, dest := migrating(t, name)
	cfg := migrate.DefaultConfig()
	cfg.BandwidthPerMigration = 1 << 20
	cfg.CompletionTimeoutPerGiB = 20 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var limited uint64
	lifted := false
	res, err := migrate.Run(ctx, h.src, name, dest, cfg,
		migrate.WithPollInterval(500*time.Millisecond),
		migrate.WithProgress(func(p migrate.Progress) {
			// Once memory moves: a change made before would be overridden
			// by the migration's own limit when its copy starts.
			if !lifted && p.Stats.MemoryBytesPerSecond > 0 {
				limited, lifted = p.Stats.MemoryBytesPerSecond, true
				assert.Check(t, h.src.SetMigrationBandwidth(ctx, name, 0))
			}
		}))
	assert.NilError(t, err)
	t.Logf("completed in %s after lifting the limit (%d bytes/s before), %d MiB moved", res.Duration, limited, res.DataProcessed>>20)
	assert.Assert(t, lifted)
	assert.Assert(t, limited <= 2<<20, "limited to 1 MiB/s at first: %d bytes/s", limited)
	assert.Assert(t, res.DataProcessed > 20<<20, "more than 20 s at 1 MiB/s: %d bytes", res.DataProcessed)
	assert.NilError(t, h.dst.Destroy(ctx, name))
}

// Past its completion timeout with post-copy allowed, the migration
// switches to post-copy and completes: the guest runs on the destination.
func TestRealMigrationPostCopy(t *testing.T) {
	const name = "mig-postcopy"
	h, dest := migrating(t, name)
	cfg := migrate.DefaultConfig()
	cfg.BandwidthPerMigration = 1 << 20
	cfg.CompletionTimeoutPerGiB = 2 * time.Second
	cfg.AllowPostCopy, cfg.AllowWorkloadDisruption = true, true
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	before := lastBeat(t, h.log(name, "src"))
	var switched, rate uint64
	res, err := migrate.Run(ctx, h.src, name, dest, cfg, migrate.WithPollInterval(200*time.Millisecond),
		migrate.WithProgress(func(p migrate.Progress) {
			if p.Mode == virtv1.MigrationPostCopy {
				if switched == 0 {
					switched = p.Stats.DataRemaining
				}
				rate = max(rate, p.Stats.MemoryBytesPerSecond)
			}
		}))
	assert.NilError(t, err)
	t.Logf("post-copy migration in %s (switched with %d MiB left), downtime %s, %d post-copy requests, up to %d MiB/s in post-copy",
		res.Duration, switched>>20, res.Downtime, res.Stats.PostcopyRequests, rate>>20)
	assert.Equal(t, res.Mode, virtv1.MigrationPostCopy)
	assert.Assert(t, switched > 100<<20, "switched early, most of the memory still to send: %d bytes", switched)
	assert.Assert(t, res.Duration < 30*time.Second, "post-copy is not held to the 1 MiB/s pre-copy limit: %s", res.Duration)
	st, _, err := h.dst.State(ctx, name)
	assert.NilError(t, err)
	assert.Equal(t, st, domain.StateRunning)
	assert.Equal(t, len(names(t, h.src)), 0, "the source has no domain left: %v", names(t, h.src))
	assert.Assert(t, beat(t, h.log(name, "dst"), before) > before)
	assert.NilError(t, h.dst.Destroy(ctx, name))
}

// Migrator errors carry the domain sentinels.
func TestRealMigratorErrors(t *testing.T) {
	h := twoHosts(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	doc := testguest.Domain("idle", h.guest, 128, h.log("idle", "src"))
	assert.NilError(t, h.src.Define(ctx, doc))
	err := h.src.AbortJob(ctx, "idle")
	assert.Assert(t, errors.Is(err, domain.ErrInvalidState), "abort without a job: %v", err)
	err = h.src.Migrate(ctx, "idle", domain.MigrateParams{DestinationURI: h.destination(t).URI})
	assert.Assert(t, errors.Is(err, domain.ErrInvalidState), "migrating a shut-off domain: %v", err)
	err = h.src.Migrate(ctx, "idle", domain.MigrateParams{})
	assert.Assert(t, errors.Is(err, domain.ErrInvalidSpec), err)
	_, err = h.src.JobStats(ctx, "missing", domain.JobStatsOptions{})
	assert.Assert(t, errors.Is(err, domain.ErrNotFound), err)
	_, err = h.src.JobStats(ctx, "idle", domain.JobStatsOptions{})
	assert.Assert(t, errors.Is(err, domain.ErrInvalidState), "job of a shut-off domain: %v", err)
	assert.NilError(t, h.src.Start(ctx, "idle", domain.StartOptions{}))
	js, err := h.src.JobStats(ctx, "idle", domain.JobStatsOptions{})
	assert.NilError(t, err)
	assert.Equal(t, js.Type, domain.JobNone)
	err = h.src.StartPostCopy(ctx, "idle")
	assert.Assert(t, errors.Is(err, domain.ErrInvalidState), "post-copy without a migration: %v", err)
	assert.NilError(t, h.src.Destroy(ctx, "idle"))
	assert.NilError(t, h.src.Undefine(ctx, "idle"))
}
