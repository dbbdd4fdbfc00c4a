package handler

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/virtkit/virtkit/deploy/certs"
)

// MigrationCertificates are a node's migration certificate (certs.NodeRequest,
// serving and client) and the CA bundle its peers' are checked with, as of
// the moment: deploy/certs/certfiles.Source reads them from files and again
// when they are renewed.
type MigrationCertificates interface {
	// ClientConfig presents this node's certificate and checks the
	// server's against the CA bundle for serverName.
	ClientConfig(serverName string) (*tls.Config, error)
	// ServerConfig presents this node's certificate and requires a client
	// certificate the CA bundle checks.
	ServerConfig(clientNames ...string) *tls.Config
}

// TCPMigrationDialer reaches a migration's target launcher through the
// target node's handler, at the address that handler wrote in the VMI's
// status.migrationState.targetNodeAddress (host:port of its
// ServeMigrations), as KubeVirt's virt-handler migration proxy does. Each
// connection speaks mutual TLS with the nodes' migration certificates, and
// the source's checks that the target's names the migration's target node
// (as the target's checks that the source's names its source), unless the
// migration's configuration says disableTLS: then it is plain TCP.
type TCPMigrationDialer struct {
	// Certificates are this node's (required unless every migration
	// disables TLS).
	Certificates MigrationCertificates
	// Dialer connects the TCP connections; the zero value is net.Dialer's.
	Dialer net.Dialer
}

var _ MigrationDialer = TCPMigrationDialer{}

// migrationHandshakeTimeout bounds a migration connection's TLS handshake
// and hello, on either side.
const migrationHandshakeTimeout = 10 * time.Second

// DialTarget implements MigrationDialer.
func (d TCPMigrationDialer) DialTarget(ctx context.Context, t MigrationTarget, ch MigrationChannel) (net.Conn, error) {
	fail := func(err error) error {
		return fmt.Errorf("handler: migration %s: %s channel to node %s's handler at %s: %w", t.Migration, ch, t.Node, t.Address, err)
	}
	if t.Address == "" {
		return nil, fail(errors.New("the target's handler gave no address"))
	}
	if _, _, err := net.SplitHostPort(t.Address); err != nil {
		return nil, fail(fmt.Errorf("targetNodeAddress: want host:port: %w", err))
	}
	c, err := d.Dialer.DialContext(ctx, "tcp", t.Address)
	if err != nil {
		return nil, fail(err)
	}
	deadline := time.Now().Add(migrationHandshakeTimeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	_ = c.SetDeadline(deadline)
	conn, err := d.hello(ctx, c, t, ch)
	if err != nil {
		c.Close()
		return nil, fail(err)
	}
	_ = c.SetDeadline(time.Time{})
	return conn, nil
}

// hello secures c (unless the migration disables TLS), sends the hello and
// reads the target's reply.
func (d TCPMigrationDialer) hello(ctx context.Context, c net.Conn, t MigrationTarget, ch MigrationChannel) (net.Conn, error) {
	conn := c
	if !t.DisableTLS {
		if d.Certificates == nil {
			return nil, errors.New("this handler has no migration certificate (and the migration does not disable TLS)")
		}
		cfg, err := d.Certificates.ClientConfig(certs.NodeName(t.Node))
		if err != nil {
			return nil, err
		}
		tc := tls.Client(c, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			return nil, fmt.Errorf("TLS: %w", err)
		}
		conn = tc
	}
	if err := writeLine(conn, helloOf(t, ch)); err != nil {
		return nil, err
	}
	var reply migrationReply
	if err := readLine(conn, &reply); err != nil {
		return nil, fmt.Errorf("reading the target's reply: %w", err)
	}
	if reply.Error != "" {
		return nil, fmt.Errorf("refused by the target: %s", reply.Error)
	}
	return conn, nil
}
