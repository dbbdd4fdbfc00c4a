package fake

import (
	"context"
	"io"
	"sync"

	"github.com/virtkit/virtkit/virt/domain"
)

// Console opens the modelled serial console of a running domain: reads
// return what GuestPrint wrote, writes are kept for GuestInput. A new
// session hangs up the previous one; stopping the domain hangs up too; see
// domain.Manager.Console.
func (m *Manager) Console(ctx context.Context, name string) (io.ReadWriteCloser, error) {
	var c *console
	err := m.onDomain(ctx, domain.OpConsole, name, func(d *fakeDomain) error {
		if d.live == nil {
			return invalidState(domain.OpConsole, name, "domain is not running")
		}
		if d.console != nil {
			d.input = append(d.input, d.console.takeInput()...)
			d.console.hangup()
		}
		c = &console{}
		c.cond = sync.NewCond(&c.mu)
		d.console = c
		return nil
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// GuestPrint makes the guest of a running domain write text on its serial
// console, for the open console session to read. Without a session the
// text is lost, as on a real serial port.
func (m *Manager) GuestPrint(name, text string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.domains[name]
	if !ok || d.live == nil {
		return &domain.Error{Op: "guest-print", Domain: name, Kind: domain.ErrInvalidState, Message: "domain is not running"}
	}
	if d.console != nil {
		d.console.guestWrite([]byte(text))
	}
	return nil
}

// GuestInput returns everything console sessions of the domain wrote to
// the guest so far and forgets it.
func (m *Manager) GuestInput(name string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.domains[name]
	if !ok {
		return ""
	}
	s := string(d.input)
	d.input = nil
	if d.console != nil {
		s += d.console.takeInput()
	}
	return s
}

// console is one session: an in-memory pipe in each direction.
type console struct {
	mu     sync.Mutex
	cond   *sync.Cond
	out    []byte // guest -> client
	in     []byte // client -> guest
	hungUp bool
	closed bool
}

func (c *console) guestWrite(p []byte) {
	c.mu.Lock()
	c.out = append(c.out, p...)
	c.mu.Unlock()
	c.cond.Broadcast()
}

func (c *console) takeInput() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := string(c.in)
	c.in = nil
	return s
}

func (c *console) hangup() {
	c.mu.Lock()
	c.hungUp = true
	c.mu.Unlock()
	c.cond.Broadcast()
}

func (c *console) Read(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		switch {
		case len(c.out) > 0:
			n := copy(p, c.out)
			c.out = c.out[n:]
			return n, nil
		case c.closed:
			return 0, io.ErrClosedPipe
		case c.hungUp:
			return 0, io.EOF
		}
		c.cond.Wait()
	}
}

func (c *console) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, io.ErrClosedPipe
	}
	if c.hungUp {
		return 0, io.EOF
	}
	c.in = append(c.in, p...)
	return len(p), nil
}

func (c *console) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.cond.Broadcast()
	return nil
}
