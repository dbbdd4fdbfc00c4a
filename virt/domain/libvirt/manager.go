package libvirt

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"libvirt.org/go/libvirt"

	"github.com/virtkit/virtkit/virt/domain"
)

var _ domain.Manager = (*Manager)(nil)

// Manager is a domain.Manager on one libvirt connection URI. It dials on
// New, dials again on the next call after the connection broke (libvirtd
// stopped or restarted), and while anyone subscribes to Events it keeps
// re-dialling in the background so that events resume by themselves.
type Manager struct {
	uri string
	log logr.Logger
	now func() time.Time
	// retry is the first pause between background re-dials; it doubles up to maxRetry.
	retry, maxRetry time.Duration

	mu      sync.Mutex
	cur     *conn         // nil while disconnected
	dialing chan struct{} // closed when the dial in progress ends; nil when none is
	dialErr error         // the last dial's failure
	closed  bool
	subs    map[*domain.EventQueue]struct{}
	// reconnecting is true while the background re-dial loop runs.
	reconnecting bool
	// everLost records that a connection was lost, so the next successful
	// dial tells subscribers the connection is back.
	everLost bool
}

// conn is one libvirt connection and the calls running on it. A conn is
// retired (closed) only after its in-flight calls return, because a C call
// may still be using it after its caller gave up.
type conn struct {
	c         *libvirt.Connect
	lost      atomic.Bool
	inflight  sync.WaitGroup
	callbacks []int
}

// Option configures New.
type Option func(*Manager)

// WithLogger sets the logger for connection events (dials, losses,
// reconnects). The default discards.
func WithLogger(l logr.Logger) Option { return func(m *Manager) { m.log = l } }

// WithClock sets the clock that stamps events. The default is time.Now.
func WithClock(now func() time.Time) Option { return func(m *Manager) { m.now = now } }

// WithReconnectBackoff sets the first and the longest pause between
// background re-dials after the connection is lost (default 100 ms and 5 s).
func WithReconnectBackoff(first, max time.Duration) Option {
	return func(m *Manager) { m.retry, m.maxRetry = first, max }
}

// New connects to the libvirt URI (for example "qemu:///system?socket=PATH",
// or "test:///default" for libvirt's in-process test driver) and returns a
// Manager. ctx bounds the first dial only.
//
// The first New in a process registers libvirt's default event loop and
// runs it on a goroutine for the rest of the process (see eventloop.go).
// libvirt wants that done before any connection is opened, so a program
// that opens its own libvirt connections too should call New first.
func New(ctx context.Context, uri string, opts ...Option) (*Manager, error) {
	m := &Manager{
		uri:      uri,
		log:      logr.Discard(),
		now:      time.Now,
		retry:    100 * time.Millisecond,
		maxRetry: 5 * time.Second,
		subs:     map[*domain.EventQueue]struct{}{},
	}
	for _, o := range opts {
		o(m)
	}
	if err := startEventLoop(); err != nil {
		return nil, &domain.Error{Op: domain.OpConnect, Kind: domain.ErrUnsupported, Message: "registering libvirt's event loop: " + err.Error(), Err: err}
	}
	c, err := m.acquire(ctx, domain.OpConnect)
	if err != nil {
		return nil, err
	}
	c.inflight.Done()
	return m, nil
}

// URI is the connection URI the Manager dials.
func (m *Manager) URI() string { return m.uri }

// Close closes the connection and ends every event subscription. A C call
// still running for a caller that gave up keeps the connection until it
// returns; the connection is closed then, in the background.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	c := m.cur
	m.cur = nil
	subs := m.subs
	m.subs = map[*domain.EventQueue]struct{}{}
	m.mu.Unlock()
	for s := range subs {
		s.Stop()
	}
	if c != nil {
		m.retire(c)
	}
	return nil
}

// acquire returns a live connection, dialling when there is none, with one
// in-flight call counted on it: the caller must call inflight.Done.
func (m *Manager) acquire(ctx context.Context, op string) (*conn, error) {
	for {
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			return nil, &domain.Error{Op: op, Kind: domain.ErrClosed}
		}
		if c := m.cur; c != nil && !c.lost.Load() {
			c.inflight.Add(1)
			m.mu.Unlock()
			return c, nil
		}
		if c := m.cur; c != nil {
			m.cur = nil
			m.retire(c)
		}
		if m.dialing == nil {
			m.dialing = make(chan struct{})
			go m.dial(m.dialing)
		}
		wait := m.dialing
		m.mu.Unlock()

		select {
		case <-wait:
		case <-ctx.Done():
			return nil, &domain.Error{Op: op, Kind: domain.ErrConnectionLost, Message: "connecting to " + m.uri + ": " + ctx.Err().Error(), Err: ctx.Err()}
		}
		m.mu.Lock()
		ok, err := m.cur != nil, m.dialErr
		m.mu.Unlock()
		if !ok {
			if err == nil {
				err = errors.New("closed while connecting")
			}
			return nil, &domain.Error{Op: op, Kind: domain.ErrConnectionLost, Message: "connecting to " + m.uri + ": " + message(err), Err: err}
		}
	}
}

// dial opens a connection on its own goroutine, so that a hung daemon holds
// up only the callers willing to wait, and installs it as the current one.
func (m *Manager) dial(done chan struct{}) {
	defer close(done)
	c, err := m.open()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dialing = nil
	m.dialErr = err
	if err != nil {
		m.log.V(1).Info("libvirt dial failed", "uri", m.uri, "error", message(err))
		return
	}
	if m.closed {
		m.retire(c)
		return
	}
	m.cur = c
	m.log.V(1).Info("libvirt connected", "uri", m.uri)
	if m.everLost {
		m.everLost = false
		m.publishLocked(domain.Event{Type: domain.EventConnectionRestored, Time: m.now()})
	}
}

// open dials and sets up a connection: close detection, keepalive, and the
// event callbacks (registered on every connection, so that a re-dial
// re-registers them).
func (m *Manager) open() (*conn, error) {
	lc, err := libvirt.NewConnect(m.uri)
	if err != nil {
		return nil, err
	}
	c := &conn{c: lc}
	if err := lc.RegisterCloseCallback(func(_ *libvirt.Connect, reason libvirt.ConnectCloseReason) {
		m.lost(c, fmt.Sprintf("closed by libvirt (reason %d)", reason))
	}); err != nil {
		// Drivers that run in-process (test:///) have no socket to lose.
		m.log.V(2).Info("no close callback on this connection", "uri", m.uri, "error", message(err))
	}
	// Keepalive notices a daemon that vanished without closing the socket
	// (host crash, network partition); libvirt then closes the connection
	// and the close callback above fires. In-process drivers refuse it.
	_ = lc.SetKeepAlive(5, 3)
	if err := m.registerEvents(c); err != nil {
		_ = lc.UnregisterCloseCallback()
		_, _ = lc.Close()
		return nil, err
	}
	return c, nil
}

// lost marks c as broken. It runs on libvirt's event loop (close callback)
// or on a call's goroutine, so it only flips state and starts goroutines.
func (m *Manager) lost(c *conn, why string) {
	if c.lost.Swap(true) {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || m.cur != c {
		return
	}
	m.log.Info("libvirt connection lost", "uri", m.uri, "why", why)
	m.everLost = true
	m.publishLocked(domain.Event{Type: domain.EventConnectionLost, Time: m.now()})
	if len(m.subs) > 0 && !m.reconnecting {
		m.reconnecting = true
		go m.reconnectLoop()
	}
}

// reconnectLoop re-dials with growing pauses while subscribers wait for
// events, until a dial works or the Manager is closed. Without subscribers
// nobody is waiting, and the next call dials instead.
func (m *Manager) reconnectLoop() {
	pause := m.retry
	defer func() {
		m.mu.Lock()
		m.reconnecting = false
		m.mu.Unlock()
	}()
	for {
		time.Sleep(pause)
		m.mu.Lock()
		stop := m.closed || len(m.subs) == 0
		m.mu.Unlock()
		if stop {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		c, err := m.acquire(ctx, "reconnect")
		cancel()
		if err == nil {
			c.inflight.Done()
			return
		}
		if pause *= 2; pause > m.maxRetry {
			pause = m.maxRetry
		}
	}
}

// retire closes c once no call uses it any more.
func (m *Manager) retire(c *conn) {
	go func() {
		c.inflight.Wait()
		if !c.lost.Load() {
			for _, id := range c.callbacks {
				_ = c.c.DomainEventDeregister(id)
			}
		}
		_ = c.c.UnregisterCloseCallback()
		_, _ = c.c.Close()
	}()
}

// call runs fn with a live connection on its own goroutine and returns its
// error mapped to domain's sentinels, or ctx's error as soon as ctx ends.
// libvirt calls are blocking C calls that cannot be interrupted: when ctx
// ends first, fn keeps running in the background until libvirt returns, and
// its result is dropped.
func (m *Manager) call(ctx context.Context, op, name string, fn func(*libvirt.Connect) error) error {
	if err := ctx.Err(); err != nil {
		return &domain.Error{Op: op, Domain: name, Err: err}
	}
	c, err := m.acquire(ctx, op)
	if err != nil {
		var de *domain.Error
		if errors.As(err, &de) {
			de.Domain = name
		}
		return err
	}
	done := make(chan error, 1)
	go func() {
		defer c.inflight.Done()
		done <- fn(c.c)
	}()
	select {
	case err := <-done:
		return m.mapError(c, op, name, err)
	case <-ctx.Done():
		return &domain.Error{Op: op, Domain: name, Err: ctx.Err()}
	}
}

// onDomain runs fn on the named domain (see call).
func (m *Manager) onDomain(ctx context.Context, op, name string, fn func(*libvirt.Domain) error) error {
	return m.call(ctx, op, name, func(c *libvirt.Connect) error {
		d, err := c.LookupDomainByName(name)
		if err != nil {
			return err
		}
		defer d.Free()
		return fn(d)
	})
}
