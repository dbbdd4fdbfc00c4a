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
