package handler

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"

	"k8s.io/apimachinery/pkg/types"
)

// The migration protocol between two handlers, on each connection the
// source's handler opens to the target's migration port: after TLS (unless
// the migration's configuration says disableTLS), the source sends one
// hello line naming the migration and the channel, the target answers one
// reply line, and when the reply carries no error the connection is the
// channel's byte stream both ways from then on.

// migrationProtocol is the version of the hello; a target refuses others.
const migrationProtocol = 1

// maxMigrationLine bounds a hello or reply line: they are a few hundred
// bytes.
const maxMigrationLine = 4096

// migrationHello is the first line of a migration connection.
type migrationHello struct {
	Version   int              `json:"version"`
	Namespace string           `json:"namespace"`
	Name      string           `json:"name"`
	VMI       types.UID        `json:"vmi"`
	Migration types.UID        `json:"migration"`
	Channel   MigrationChannel `json:"channel"`
}

func helloOf(t MigrationTarget, ch MigrationChannel) migrationHello {
	return migrationHello{Version: migrationProtocol, Namespace: t.Namespace, Name: t.Name, VMI: t.VMI, Migration: t.Migration, Channel: ch}
}

// check says what is wrong with a hello, naming the field.
func (h migrationHello) check() error {
	switch {
	case h.Version != migrationProtocol:
		return fmt.Errorf("version %d: this handler speaks version %d", h.Version, migrationProtocol)
	case h.Namespace == "" || h.Name == "" || h.VMI == "" || h.Migration == "":
		return errors.New("namespace, name, vmi and migration: all are required")
	case !slices.Contains(MigrationChannels, h.Channel):
		return fmt.Errorf("channel %q: not one of %q", h.Channel, MigrationChannels)
	}
	return nil
}

// migrationReply is the target's answer to a hello.
type migrationReply struct {
	// Error says why the connection is refused; empty: accepted.
	Error string `json:"error,omitempty"`
}

// writeLine writes v as one JSON line.
func writeLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// readLine reads one JSON line into v, at most maxMigrationLine bytes, and
// nothing past its end: the channel's stream follows it on the connection.
func readLine(r io.Reader, v any) error {
	var line []byte
	b := make([]byte, 1)
	for {
		if _, err := io.ReadFull(r, b); err != nil {
			if errors.Is(err, io.EOF) && len(line) > 0 {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		if b[0] == '\n' {
			break
		}
		if len(line) == maxMigrationLine {
			return fmt.Errorf("a line longer than %d bytes", maxMigrationLine)
		}
		line = append(line, b[0])
	}
	return json.Unmarshal(line, v)
}

// prefixConn is a connection whose first bytes were read already, to be
// read again.
type prefixConn struct {
	net.Conn
	prefix []byte
}

func (c *prefixConn) Read(b []byte) (int, error) {
	if len(c.prefix) > 0 {
		n := copy(b, c.prefix)
		c.prefix = c.prefix[n:]
		return n, nil
	}
	return c.Conn.Read(b)
}

// CloseWrite passes a half close on to the connection.
func (c *prefixConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Conn.Close()
}
