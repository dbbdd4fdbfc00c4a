package fake_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/virtkit/virtkit/virt/domain"
	"github.com/virtkit/virtkit/virt/domain/fake"
)

func started(t *testing.T, opts ...fake.Option) *fake.Manager {
	t.Helper()
	m := fake.New(opts...)
	t.Cleanup(func() { m.Close() })
	ctx := context.Background()
	assert.NilError(t, m.Define(ctx, Document("vm")))
	assert.NilError(t, m.Start(ctx, "vm", domain.StartOptions{}))
	return m
}

func TestFailNextQueuesAndChangesNothing(t *testing.T) {
	m := started(t)
	ctx := context.Background()
	boom := errors.New("boom")
	m.FailNext(domain.OpPause, boom)
	m.FailNext(domain.OpPause, domain.ErrConnectionLost)
	err := m.Pause(ctx, "vm")
	assert.Assert(t, errors.Is(err, boom), err)
	assert.ErrorContains(t, err, `domain "vm": pause`)
	assert.Assert(t, errors.Is(m.Pause(ctx, "vm"), domain.ErrConnectionLost))
	st, _, err := m.State(ctx, "vm")
	assert.NilError(t, err)
	assert.Equal(t, st, domain.StateRunning)
	assert.NilError(t, m.Pause(ctx, "vm"))
}

func TestHoldReturnsContextError(t *testing.T) {
	m := started(t)
	release := m.Hold(domain.OpStats)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := m.Stats(ctx, "vm")
	assert.Assert(t, errors.Is(err, context.DeadlineExceeded), err)
	release()
	_, err = m.Stats(context.Background(), "vm")
	assert.NilError(t, err)
}

func TestAgentOverrideAndMissingChannel(t *testing.T) {
	m := started(t, fake.WithAgent(func(_, cmd string) (string, error) { return `{"return":"` + cmd + `"}`, nil }))
	ctx := context.Background()
	reply, err := m.GuestAgentCommand(ctx, "vm", "x", time.Second)
	assert.NilError(t, err)
	assert.Equal(t, reply, `{"return":"x"}`)

	doc := Document("noagent")
	doc.Devices.Channels = nil
	assert.NilError(t, m.Define(ctx, doc))
	assert.NilError(t, m.Start(ctx, "noagent", domain.StartOptions{}))
	err = m.GuestAgentPing(ctx, "noagent")
	assert.Assert(t, errors.Is(err, domain.ErrAgentUnavailable), err)
	assert.ErrorContains(t, err, "not configured")
}

func TestDefaultAgentRejectsUnknownCommand(t *testing.T) {
	m := started(t)
	_, err := m.GuestAgentCommand(context.Background(), "vm", `{"execute":"guest-exec"}`, 0)
	assert.ErrorContains(t, err, "guest-exec has not been found")
}

func TestConsoleTakeoverAndHangup(t *testing.T) {
	m := started(t)
	ctx := context.Background()
	first, err := m.Console(ctx, "vm")
	assert.NilError(t, err)
	_, err = io.WriteString(first, "hello\n")
	assert.NilError(t, err)
	second, err := m.Console(ctx, "vm")
	assert.NilError(t, err)
	_, err = first.Read(make([]byte, 1))
	assert.Equal(t, err, io.EOF, "the earlier session is hung up")
	assert.NilError(t, m.GuestPrint("vm", "hi\n"))
	buf := make([]byte, 16)
	n, err := second.Read(buf)
	assert.NilError(t, err)
	assert.Equal(t, string(buf[:n]), "hi\n")
	assert.Equal(t, m.GuestInput("vm"), "hello\n")
	assert.NilError(t, m.Destroy(ctx, "vm"))
	_, err = second.Read(buf)
	assert.Equal(t, err, io.EOF, "stopping the domain hangs the console up")
}

func TestCrashAndTransientDomain(t *testing.T) {
	m := started(t)
	ctx := context.Background()
	assert.NilError(t, m.Undefine(ctx, "vm"))
	list, err := m.List(ctx)
	assert.NilError(t, err)
	assert.Equal(t, len(list), 1)
	assert.Assert(t, !list[0].Persistent)
	assert.NilError(t, m.Crash("vm"))
	_, _, err = m.State(ctx, "vm")
	assert.Assert(t, errors.Is(err, domain.ErrNotFound), "a transient domain disappears when it stops: %v", err)
}

func TestIgnoreACPIKeepsRunning(t *testing.T) {
	m := started(t)
	ctx := context.Background()
	assert.NilError(t, m.IgnoreACPI("vm", true))
	assert.NilError(t, m.Shutdown(ctx, "vm"))
	st, _, _ := m.State(ctx, "vm")
	assert.Equal(t, st, domain.StateRunning)
}

func TestUnsupportedHotplugDevice(t *testing.T) {
	m := started(t)
	err := m.AttachDevice(context.Background(), "vm", domain.DeviceXML(`<watchdog model="i6300esb"/>`), domain.DeviceLive)
	assert.Assert(t, errors.Is(err, domain.ErrUnsupported), err)
	assert.Assert(t, strings.Contains(err.Error(), "watchdog"))
}
