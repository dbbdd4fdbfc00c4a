package launcher

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"gotest.tools/v3/assert"
	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/virt/domain"
	"github.com/virtkit/virtkit/virt/domain/fake"
)

func TestEndResult(t *testing.T) {
	for _, tc := range []struct {
		reason domain.Reason
		code   int
	}{
		{domain.ReasonShutoffShutdown, ExitOK},
		{domain.ReasonShutoffMigrated, ExitOK},
		{domain.ReasonShutoffSaved, ExitOK},
		{domain.ReasonShutoffDestroyed, ExitGuestDestroyed},
		{domain.ReasonShutoffCrashed, ExitGuestCrashed},
		{domain.ReasonShutoffFailed, ExitGuestCrashed},
		{domain.ReasonUnknown, ExitGuestCrashed},
	} {
		r := endResult(tc.reason)
		assert.Equal(t, r.Code, tc.code, "shut off with reason %s: %s", domain.ReasonString(domain.StateShutoff, tc.reason), r.Reason)
		assert.Assert(t, r.Reason != "")
	}
}

// newRunning defines and starts a domain on a fake Manager.
func newRunning(t *testing.T, name string) *fake.Manager {
	t.Helper()
	m := fake.New()
	ctx := context.Background()
	doc := &libvirtxml.Domain{Type: "qemu", Name: name, Memory: &libvirtxml.DomainMemory{Value: 128, Unit: "MiB"}}
	assert.NilError(t, m.Define(ctx, doc))
	assert.NilError(t, m.Start(ctx, name, domain.StartOptions{}))
	return m
}

func TestFollowReportsTheGuestsEnd(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(m *fake.Manager) error
		code int
	}{
		{"guest powers off", func(m *fake.Manager) error { return m.Shutdown(context.Background(), "ns_vm") }, ExitOK},
		{"someone destroys it", func(m *fake.Manager) error { return m.Destroy(context.Background(), "ns_vm") }, ExitGuestDestroyed},
		{"guest crashes", func(m *fake.Manager) error { return m.Crash("ns_vm") }, ExitGuestCrashed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newRunning(t, "ns_vm")
			w := watcher{m: m, name: "ns_vm", poll: time.Millisecond, log: logr.Discard()}
			r, ended := w.check(context.Background())
			assert.Assert(t, !ended && w.started, "a running domain: %v", r)
			assert.NilError(t, tc.end(m))
			r, ended = w.follow(context.Background(), make(chan struct{}))
			assert.Assert(t, ended)
			assert.Equal(t, r.Code, tc.code, r.Reason)
		})
	}
}

// The handler undefines a domain as soon as it has seen it end: the watcher
// must still tell a crash from an orderly end when the domain is gone by the
// time it looks again.
func TestFollowTellsHowAnUndefinedDomainEnded(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(m *fake.Manager) error
		code int
	}{
		{"guest crashes", func(m *fake.Manager) error { return m.Crash("ns_vm") }, ExitGuestCrashed},
		{"someone destroys it", func(m *fake.Manager) error { return m.Destroy(context.Background(), "ns_vm") }, ExitGuestDestroyed},
		{"guest powers off", func(m *fake.Manager) error { return m.Shutdown(context.Background(), "ns_vm") }, ExitOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			m := newRunning(t, "ns_vm")
			w := newWatcher(ctx, m, "ns_vm", time.Hour, logr.Discard())
			assert.Assert(t, w.events != nil)
			r, ended := w.check(ctx)
			assert.Assert(t, !ended && w.started, "a running domain: %v", r)
			assert.NilError(t, tc.end(m))
			assert.NilError(t, m.Undefine(ctx, "ns_vm"))
			_, _, err := m.State(ctx, "ns_vm")
			assert.ErrorIs(t, err, domain.ErrNotFound)

			// Polling alone finds the domain gone: its stop event says how it ended.
			r, ended = w.check(ctx)
			assert.Assert(t, ended)
			assert.Equal(t, r.Code, tc.code, r.Reason)
		})
	}
}

func TestFollowEndsOnTheStopEvent(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := newRunning(t, "ns_vm")
	// An hour between polls: only the event can end the watch in time.
	w := newWatcher(ctx, m, "ns_vm", time.Hour, logr.Discard())
	_, ended := w.check(ctx)
	assert.Assert(t, !ended && w.started)
	done := make(chan Result, 1)
	go func() {
		r, _ := w.follow(ctx, make(chan struct{}))
		done <- r
	}()
	assert.NilError(t, m.Crash("ns_vm"))
	select {
	case r := <-done:
		assert.Equal(t, r.Code, ExitGuestCrashed, r.Reason)
	case <-time.After(30 * time.Second):
		t.Fatal("follow did not end on the domain's stop event")
	}
}

func TestGoneWithoutAStopEventIsAnOrderlyEnd(t *testing.T) {
	m := newRunning(t, "ns_vm")
	w := watcher{m: m, name: "ns_vm", poll: time.Millisecond, log: logr.Discard()}
	_, ended := w.check(context.Background())
	assert.Assert(t, !ended && w.started)
	assert.NilError(t, m.Destroy(context.Background(), "ns_vm"))
	assert.NilError(t, m.Undefine(context.Background(), "ns_vm"))
	r, ended := w.check(context.Background())
	assert.Assert(t, ended)
	assert.Equal(t, r.Code, ExitOK, r.Reason)
	assert.Equal(t, r.Reason, "domain ns_vm is gone")
}

func TestFollowWaitsForADomainToStart(t *testing.T) {
	m := fake.New()
	w := watcher{m: m, name: "ns_vm", poll: time.Millisecond, log: logr.Discard()}
	r, ended := w.check(context.Background())
	assert.Assert(t, !ended && !w.started, "no domain yet: %v", r)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, ended = w.follow(ctx, make(chan struct{}))
	assert.Assert(t, !ended, "nothing ends before a domain started")
}

func TestStopPowersOffGracefullyOrDestroysAfterGrace(t *testing.T) {
	m := newRunning(t, "ns_vm")
	w := watcher{m: m, name: "ns_vm", poll: time.Millisecond, log: logr.Discard(), started: true}
	r := w.stop(time.Second, make(chan struct{}))
	assert.Equal(t, r.Code, ExitOK, r.Reason)
	assert.Assert(t, strings.HasPrefix(r.Reason, "guest shut down on request"), r.Reason)

	m = newRunning(t, "ns_vm")
	assert.NilError(t, m.IgnoreACPI("ns_vm", true))
	w = watcher{m: m, name: "ns_vm", poll: time.Millisecond, log: logr.Discard(), started: true}
	r = w.stop(20*time.Millisecond, make(chan struct{}))
	assert.Equal(t, r.Code, ExitOK, r.Reason)
	assert.Equal(t, r.Reason, "guest destroyed: it did not power off within the grace period of 20ms")
	st, reason, err := m.State(context.Background(), "ns_vm")
	assert.NilError(t, err)
	assert.Equal(t, st, domain.StateShutoff)
	assert.Equal(t, reason, domain.ReasonShutoffDestroyed)
}

func TestFollowNoticesLibvirtdDying(t *testing.T) {
	m := newRunning(t, "ns_vm")
	w := watcher{m: m, name: "ns_vm", poll: 10 * time.Millisecond, log: logr.Discard()}
	died := make(chan struct{})
	close(died)
	r, ended := w.follow(context.Background(), died)
	assert.Assert(t, ended)
	assert.Equal(t, r.Code, ExitLibvirtdDied)
}

func TestConfigValidate(t *testing.T) {
	assert.ErrorContains(t, Config{Domain: "d"}.Validate(), "Config.Layout.Root")
	assert.ErrorContains(t, Config{Layout: Layout{Root: "/r"}}.Validate(), "Config.Domain")
	assert.ErrorContains(t, Config{Layout: Layout{Root: "/r"}, Domain: "d", GracePeriod: -1}.Validate(), "Config.GracePeriod")
	r := Run(context.Background(), Config{}, nil)
	assert.Equal(t, r.Code, ExitSetupFailed)
}

func TestReadResult(t *testing.T) {
	l := Layout{Root: t.TempDir()}
	_, ended, err := ReadResult(l)
	assert.Assert(t, err == nil && !ended, "no exit file: ended %v, %v", ended, err)
	res := Run(context.Background(), Config{Layout: l}, nil) // invalid: ends at once, recording its result
	got, ended, err := ReadResult(l)
	assert.NilError(t, err)
	assert.Assert(t, ended)
	assert.DeepEqual(t, got, res)
	assert.NilError(t, os.WriteFile(l.ExitFile(), []byte("{"), 0o644))
	_, _, err = ReadResult(l)
	assert.ErrorContains(t, err, l.ExitFile())
}
