package libvirt

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"libvirt.org/go/libvirt"

	"github.com/virtkit/virtkit/virt/domain"
)

// Console streams the first serial console; see domain.Manager.Console.
//
// The stream is non-blocking and fed by libvirt's event loop: a blocking
// virStreamRecv on a remote connection holds the connection's lock while it
// waits for the guest to print, which would stall every other call.
func (m *Manager) Console(ctx context.Context, name string) (io.ReadWriteCloser, error) {
	cs := &console{name: name}
	cs.cond = sync.NewCond(&cs.mu)
	err := m.call(ctx, opConsole, name, func(c *libvirt.Connect) error {
		d, err := c.LookupDomainByName(name)
		if err != nil {
			return err
		}
		defer d.Free()
		st, err := c.NewStream(libvirt.STREAM_NONBLOCK)
		if err != nil {
			return err
		}
		// FORCE takes the console over from an earlier session (one the
		// caller forgot to close, or another client's), as `virsh console
		// --force` does; without it a second session fails.
		if err := d.OpenConsole("", st, libvirt.DOMAIN_CONSOLE_FORCE); err != nil {
			_ = st.Free()
			return err
		}
		events := libvirt.STREAM_EVENT_READABLE | libvirt.STREAM_EVENT_ERROR | libvirt.STREAM_EVENT_HANGUP
		if err := st.EventAddCallback(events, cs.onEvent); err != nil {
			_ = st.Abort()
			_ = st.Free()
			return err
		}
		return cs.attach(st)
	})
	if err != nil {
		// If the caller gave up while libvirt was still opening, attach
		// releases the stream when it arrives.
		cs.Close()
		return nil, err
	}
	return cs, nil
}

// console is an io.ReadWriteCloser over a non-blocking libvirt stream. The
// event loop appends what the guest printed to buf; Read takes from it.
type console struct {
	name string

	mu     sync.Mutex
	cond   *sync.Cond // on mu; broadcast when buf grows, the stream ends or Close
	st     *libvirt.Stream
	buf    []byte
	err    error // why the stream ended; io.EOF when the guest side closed
	closed bool
}

// attach installs the opened stream, or releases it when Close came first.
func (c *console) attach(st *libvirt.Stream) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		go release(st)
		return errors.New("console closed while opening")
	}
	c.st = st
	return nil
}

// onEvent runs on libvirt's event loop: drain what is readable, never block.
func (c *console) onEvent(st *libvirt.Stream, events libvirt.StreamEventType) {
	var chunk [4096]byte
	var end error
	if events&libvirt.STREAM_EVENT_READABLE != 0 {
		for {
			n, err := st.Recv(chunk[:])
			if n > 0 {
				c.mu.Lock()
				c.buf = append(c.buf, chunk[:n]...)
				c.mu.Unlock()
				continue
			}
			if le, ok := err.(libvirt.Error); ok && le.Code == libvirt.ERR_OK {
				// -2 from virStreamRecv: nothing more for now.
				break
			}
			end = err
			break
		}
	}
	if end == nil && events&(libvirt.STREAM_EVENT_ERROR|libvirt.STREAM_EVENT_HANGUP) != 0 {
		end = io.EOF
	}
	if end != nil {
		_ = st.EventRemoveCallback()
		c.mu.Lock()
		if c.err == nil {
			c.err = end
		}
		c.mu.Unlock()
	}
	c.cond.Broadcast()
}

// Read returns what the guest printed, waiting until there is something.
func (c *console) Read(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		switch {
		case len(c.buf) > 0:
			n := copy(p, c.buf)
			c.buf = c.buf[n:]
			return n, nil
		case c.closed:
			return 0, io.ErrClosedPipe
		case c.err != nil:
			return 0, c.err
		}
		c.cond.Wait()
	}
}

// Write sends p to the guest's serial port.
func (c *console) Write(p []byte) (int, error) {
	written := 0
	for written < len(p) {
		c.mu.Lock()
		st, closed, end := c.st, c.closed, c.err
		c.mu.Unlock()
		if closed || st == nil {
			return written, io.ErrClosedPipe
		}
		if end != nil {
			return written, end
		}
		n, err := st.Send(p[written:])
		if le, ok := err.(libvirt.Error); ok && le.Code == libvirt.ERR_OK {
			// -2 from virStreamSend: the stream is full; the guest reads slowly.
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if err != nil {
			return written, &domain.Error{Op: opConsole, Domain: c.name, Message: message(err), Err: err}
		}
		written += n
	}
	return written, nil
}

// Close ends the console session; a pending Read returns io.ErrClosedPipe.
func (c *console) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	st := c.st
	c.st = nil
	c.mu.Unlock()
	c.cond.Broadcast()
	if st != nil {
		// Aborting talks to the daemon; a hung one must not hold up Close.
		go release(st)
	}
	return nil
}

func release(st *libvirt.Stream) {
	_ = st.EventRemoveCallback()
	_ = st.Abort()
	_ = st.Free()
}
