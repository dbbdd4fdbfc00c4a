package libvirt_test

import (
	"context"
	"errors"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/virt/domain"
	"github.com/virtkit/virtkit/virt/domain/libvirt"
	"github.com/virtkit/virtkit/virt/libvirtd"
)

// startDaemon starts a private libvirtd in dir (a restart reuses the
// folder: same socket, same persistent definitions) and stops it when the
// test ends, if the test did not.
func startDaemon(t *testing.T, cfg libvirtd.Config) *libvirtd.Daemon {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := libvirtd.Start(ctx, cfg, libvirtd.WithEnv(testenv.OwnerEnv+"="+strconv.Itoa(os.Getpid())))
	if err != nil {
		t.Fatalf("start libvirtd: %v", err)
	}
	t.Cleanup(func() { stopDaemon(t, d) })
	return d
}

func stopDaemon(t *testing.T, d *libvirtd.Daemon) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := d.Stop(ctx); err != nil {
		t.Errorf("stop libvirtd: %v", err)
	}
}

// After libvirtd stops, calls fail with ErrConnectionLost and subscribers
// see EventConnectionLost; once a new libvirtd serves the same socket, the
// Manager dials again by itself, subscribers see EventConnectionRestored,
// and events flow again on the same channel.
func TestReconnectAfterLibvirtdRestart(t *testing.T) {
	testenv.Integration(t)
	cfg := libvirtd.Config{Dir: testenv.Dir(t), CacheDir: testenv.CapabilitiesCache(t)}
	d := startDaemon(t, cfg)
	cfg = d.Config() // keep the host UUID across the restart

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m, err := libvirt.New(ctx, d.URI(), libvirt.WithReconnectBackoff(50*time.Millisecond, 500*time.Millisecond))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer m.Close()
	events, err := m.Events(ctx)
	if err != nil {
		t.Fatalf("Events: %v", err)
	}
	const name = "reconnect"
	if err := m.Define(ctx, testDocument(name)); err != nil {
		t.Fatalf("Define: %v", err)
	}
	waitEvent(t, events, "", domain.EventDefined)

	stopDaemon(t, d)
	waitEvent(t, events, "", domain.EventConnectionLost)
	_, err = m.List(ctx)
	if !errors.Is(err, domain.ErrConnectionLost) {
		t.Fatalf("List with libvirtd stopped: %v, want ErrConnectionLost", err)
	}

	startDaemon(t, cfg)
	waitEvent(t, events, "", domain.EventConnectionRestored)
	if _, _, err := m.State(ctx, name); err != nil {
		t.Fatalf("State after the restart: %v", err)
	}
	// The event callbacks were registered again on the new connection.
	if err := m.Undefine(ctx, name); err != nil {
		t.Fatalf("Undefine: %v", err)
	}
	waitEvent(t, events, name, domain.EventUndefined)
}

// Without event subscribers nothing re-dials in the background: the next
// call does, also after libvirtd was killed rather than stopped.
func TestReconnectOnNextCall(t *testing.T) {
	testenv.Integration(t)
	cfg := libvirtd.Config{Dir: testenv.Dir(t), CacheDir: testenv.CapabilitiesCache(t)}
	d := startDaemon(t, cfg)
	cfg = d.Config()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m, err := libvirt.New(ctx, d.URI())
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer m.Close()
	if err := m.Define(ctx, testDocument("next-call")); err != nil {
		t.Fatalf("Define: %v", err)
	}
	if err := syscall.Kill(d.PID(), syscall.SIGKILL); err != nil {
		t.Fatalf("kill libvirtd: %v", err)
	}
	<-d.Done()
	stopDaemon(t, d) // whatever else ran in its namespace
	startDaemon(t, cfg)
	list, err := m.List(ctx)
	for i := 0; err != nil && i < 2; i++ {
		// The first call after the restart may still meet the old
		// connection and report it lost; the next one dials.
		if !errors.Is(err, domain.ErrConnectionLost) {
			t.Fatalf("List after the restart: %v, want success or ErrConnectionLost", err)
		}
		list, err = m.List(ctx)
	}
	if err != nil {
		t.Fatalf("List after the restart: %v", err)
	}
	if len(list) != 1 || list[0].Name != "next-call" {
		t.Fatalf("List after the restart: %+v, want the domain defined before", list)
	}
}

// waitEvent reads events until one of the given type (for the named
// domain, if any) arrives.
func waitEvent(t *testing.T, events <-chan domain.Event, name string, typ domain.EventType) domain.Event {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case e, ok := <-events:
			if !ok {
				t.Fatalf("events channel closed while waiting for %v", typ)
			}
			if e.Type == typ && (name == "" || e.Domain == name) {
				return e
			}
		case <-timeout:
			t.Fatalf("no %v event after 30s", typ)
		}
	}
}
