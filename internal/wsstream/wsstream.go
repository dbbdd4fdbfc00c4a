// Package wsstream carries a raw byte stream over a websocket the way
// KubeVirt's console and VNC subresources do: subprotocol plain.kubevirt.io,
// every write one binary message, reads the concatenated payloads. It is
// shared by nodeapi (virt-api <-> handler) and subresources (user <-> virt-api).
package wsstream

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// Subprotocol is the websocket subprotocol of KubeVirt's raw byte streams.
const Subprotocol = "plain.kubevirt.io"

// BufferSize is the websocket read and write buffer size KubeVirt's client uses.
const BufferSize = 10240

// closeWait bounds how long Close waits to deliver the close frame.
const closeWait = time.Second

// Upgrader returns the upgrader for a stream endpoint. Origin is not checked:
// callers are authenticated by client certificate or by the aggregator, not
// by cookies, so a foreign page gains nothing (KubeVirt does the same).
func Upgrader() *websocket.Upgrader {
	return &websocket.Upgrader{
		ReadBufferSize:  BufferSize,
		WriteBufferSize: BufferSize,
		Subprotocols:    []string{Subprotocol},
		CheckOrigin:     func(*http.Request) bool { return true },
	}
}

// Dialer returns a dialer that asks for the stream subprotocol.
func Dialer() *websocket.Dialer {
	return &websocket.Dialer{
		ReadBufferSize:   BufferSize,
		WriteBufferSize:  BufferSize,
		Subprotocols:     []string{Subprotocol},
		HandshakeTimeout: 10 * time.Second,
	}
}

// Conn is a websocket connection seen as an io.ReadWriteCloser of raw bytes.
type Conn struct {
	ws      *websocket.Conn
	wmu     sync.Mutex // one writer at a time, as gorilla requires
	cur     io.Reader  // the message being read
	closeMu sync.Once
}

var _ io.ReadWriteCloser = (*Conn)(nil)

// New wraps ws.
func New(ws *websocket.Conn) *Conn { return &Conn{ws: ws} }

// Read returns the next bytes of the stream, across message boundaries. Both
// binary and text messages carry stream bytes. A normal close is io.EOF.
func (c *Conn) Read(p []byte) (int, error) {
	for {
		if c.cur == nil {
			typ, r, err := c.ws.NextReader()
			if err != nil {
				if websocket.IsCloseError(err, websocket.CloseNormalClosure, websocket.CloseGoingAway, websocket.CloseNoStatusReceived) {
					return 0, io.EOF
				}
				return 0, err
			}
			if typ != websocket.BinaryMessage && typ != websocket.TextMessage {
				continue
			}
			c.cur = r
		}
		n, err := c.cur.Read(p)
		if errors.Is(err, io.EOF) {
			c.cur = nil
			if n > 0 {
				return n, nil
			}
			continue
		}
		return n, err
	}
}

// Write sends p as one binary message.
func (c *Conn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.ws.WriteMessage(websocket.BinaryMessage, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Close sends a normal close frame, then closes the connection.
func (c *Conn) Close() error {
	var err error
	c.closeMu.Do(func() {
		c.wmu.Lock()
		_ = c.ws.WriteControl(websocket.CloseMessage,
			websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(closeWait))
		c.wmu.Unlock()
		err = c.ws.Close()
	})
	return err
}

// Splice copies a to b and b to a until either side ends or ctx is done, then
// closes both. It returns the first error that is not an orderly end.
func Splice(ctx context.Context, a, b io.ReadWriteCloser) error {
	errs := make(chan error, 2)
	cp := func(dst io.Writer, src io.Reader) {
		_, err := io.Copy(dst, src)
		errs <- err
	}
	go cp(a, b)
	go cp(b, a)
	var first error
	pending := 2
	select {
	case first = <-errs:
		pending--
	case <-ctx.Done():
	}
	_ = a.Close()
	_ = b.Close()
	for ; pending > 0; pending-- {
		<-errs // closing both ends unblocks the other copy
	}
	if first == nil || errors.Is(first, io.EOF) || errors.Is(first, net.ErrClosed) || errors.Is(first, io.ErrClosedPipe) {
		return nil
	}
	return first
}
