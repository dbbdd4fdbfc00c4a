package handler

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/deploy/certs"
)

// tlsRecordHandshake is the first byte of a TLS client hello; a plain
// migration connection starts with its hello line, '{'.
const tlsRecordHandshake = 0x16

// maxPendingMigrationConns bounds the connections that have not yet said
// which migration they belong to: each has migrationHandshakeTimeout to.
const maxPendingMigrationConns = 64

// migrationPeer is who opened a migration connection: the node its
// verified certificate names, or none over plain TCP.
type migrationPeer struct {
	Node string
	// Plain says the connection is not TLS: no identity, allowed only for
	// a migration whose configuration disables TLS.
	Plain bool
}

// openIncoming checks that peer may open hello's channel and connects it
// to the target launcher.
type openIncoming func(ctx context.Context, peer migrationPeer, hello migrationHello) (net.Conn, error)

// ServeMigrations is the target's end of migrations between nodes, the
// address this handler's Config.MigrationAddress advertises: it accepts
// the source handlers' connections on ln (TCPMigrationDialer's), speaking
// mutual TLS with certs, and connects each to the channel of the target
// launcher on this node that its hello names, once the hello is known to
// come from the migration's source node: its certificate must name the
// node (certs.NodeOf) that the VMI's status.migrationState.sourceNode
// names, the migration must be the VMI's, unfinished, and targeting this
// node. A plain connection is accepted only for a migration whose
// configuration says disableTLS; certs may be nil when every migration
// does. It serves until ctx ends, then closes ln and every connection.
func (r *Reconciler) ServeMigrations(ctx context.Context, ln net.Listener, certs MigrationCertificates) error {
	s := &migrationServer{certs: certs, open: r.openIncoming, log: r.log.WithName("migrations"),
		pending: make(chan struct{}, maxPendingMigrationConns)}
	return s.serve(ctx, ln)
}

// migrationServer accepts migration connections; ServeMigrations runs one.
type migrationServer struct {
	certs   MigrationCertificates
	open    openIncoming
	log     logr.Logger
	pending chan struct{}

	conns connSet
	wg    sync.WaitGroup
}

func (s *migrationServer) serve(ctx context.Context, ln net.Listener) error {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	s.log.Info("serving migrations", "address", ln.Addr().String(), "tls", s.certs != nil)
	var err error
	for {
		var c net.Conn
		if c, err = ln.Accept(); err != nil {
			break
		}
		select {
		case s.pending <- struct{}{}:
		default:
			s.log.Info("refusing a migration connection: too many have not said what they are", "remote", c.RemoteAddr().String())
			c.Close()
			continue
		}
		if !s.conns.add(c) {
			<-s.pending
			c.Close()
			break
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer s.conns.remove(c)
			defer c.Close()
			s.handle(ctx, c)
		}()
	}
	s.conns.close()
	s.wg.Wait()
	if ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("handler: serving migrations: %w", err)
}

// handle authenticates c, reads its hello, and splices it to the target
// launcher's channel when the hello is allowed.
func (s *migrationServer) handle(ctx context.Context, c net.Conn) {
	released := false
	release := func() {
		if !released {
			released = true
			<-s.pending
		}
	}
	defer release()
	_ = c.SetDeadline(time.Now().Add(migrationHandshakeTimeout))
	conn, peer, hello, err := s.accept(ctx, c)
	log := s.log.WithValues("remote", c.RemoteAddr().String(), "peer", peer.Node)
	if err != nil {
		log.Info("migration connection refused", "error", err.Error())
		if conn != nil {
			_ = writeLine(conn, migrationReply{Error: err.Error()})
		}
		return
	}
	log = log.WithValues("vmi", hello.Namespace+"/"+hello.Name, "migration", hello.Migration, "channel", hello.Channel)
	octx, cancel := context.WithTimeout(ctx, callTimeout)
	up, err := s.open(octx, peer, hello)
	cancel()
	if err != nil {
		log.Info("migration connection refused", "error", err.Error())
		_ = writeLine(conn, migrationReply{Error: err.Error()})
		return
	}
	if !s.conns.add(up) {
		up.Close()
		return
	}
	defer s.conns.remove(up)
	defer up.Close()
	if err := writeLine(conn, migrationReply{}); err != nil {
		log.Info("migration connection lost before it was accepted", "error", err.Error())
		return
	}
	_ = c.SetDeadline(time.Time{})
	release()
	log.V(1).Info("migration channel open")
	splice(conn, up)
}

// accept reads c's first byte to tell TLS from plain TCP, completes the
// TLS handshake and names the peer, and reads the hello. conn is where a
// refusal can be written (nil when not even that is possible).
func (s *migrationServer) accept(ctx context.Context, c net.Conn) (conn net.Conn, peer migrationPeer, hello migrationHello, err error) {
	first := make([]byte, 1)
	if _, err := io.ReadFull(c, first); err != nil {
		return nil, peer, hello, fmt.Errorf("reading the first byte: %w", err)
	}
	conn = &prefixConn{Conn: c, prefix: first}
	if first[0] == tlsRecordHandshake {
		if s.certs == nil {
			return nil, peer, hello, errors.New("a TLS connection, but this handler has no migration certificate")
		}
		tc := tls.Server(conn, s.certs.ServerConfig())
		if err := tc.HandshakeContext(ctx); err != nil {
			return nil, peer, hello, fmt.Errorf("TLS: %w", err)
		}
		conn = tc
		peers := tc.ConnectionState().PeerCertificates
		if len(peers) == 0 {
			return conn, peer, hello, errors.New("TLS: no client certificate (the migration certificates have no CA bundle to check one)")
		}
		node, err := certs.NodeOf(peers[0])
		if err != nil {
			return conn, peer, hello, err
		}
		peer.Node = node
	} else {
		peer.Plain = true
	}
	if err := readLine(conn, &hello); err != nil {
		return conn, peer, hello, fmt.Errorf("reading the hello: %w", err)
	}
	if err := hello.check(); err != nil {
		return conn, peer, hello, fmt.Errorf("hello: %w", err)
	}
	return conn, peer, hello, nil
}

// openIncoming is the Reconciler's check of a migration connection and
// its connection to the target launcher's channel: the VMI the hello
// names must be migrating by its migration to this node, from the node
// the peer's certificate names (or allow plain connections), and the
// target launcher must be here.
func (r *Reconciler) openIncoming(ctx context.Context, peer migrationPeer, h migrationHello) (net.Conn, error) {
	key := types.NamespacedName{Namespace: h.Namespace, Name: h.Name}
	vmi := &virtv1.VirtualMachineInstance{}
	if err := r.reader.Get(ctx, key, vmi); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("VirtualMachineInstance %s is not there", key)
		}
		return nil, fmt.Errorf("VirtualMachineInstance %s: %w", key, err)
	}
	if err := incomingAllowed(vmi, r.cfg.NodeName, peer, h); err != nil {
		return nil, fmt.Errorf("VirtualMachineInstance %s: %w", key, err)
	}
	host, err := r.hostLayout(ctx, vmi, h.Migration)
	if err != nil {
		return nil, err
	}
	c, err := dialChannel(ctx, host, h.Channel)
	if err != nil {
		return nil, fmt.Errorf("VirtualMachineInstance %s: the target launcher's %s channel: %w", key, h.Channel, err)
	}
	return c, nil
}

// incomingAllowed says whether peer may open a channel of hello's
// migration of vmi to node, from what the VMI's status says.
func incomingAllowed(vmi *virtv1.VirtualMachineInstance, node string, peer migrationPeer, h migrationHello) error {
	ms := vmi.Status.MigrationState
	switch {
	case vmi.UID != h.VMI:
		return fmt.Errorf("uid %s, not %s", vmi.UID, h.VMI)
	case ms == nil || ms.MigrationUID != h.Migration:
		return fmt.Errorf("migration %s is not the VMI's", h.Migration)
	case ms.TargetNode != node:
		return fmt.Errorf("migration %s goes to node %q, not to this node %s", h.Migration, ms.TargetNode, node)
	case peer.Plain:
		if ms.MigrationConfiguration == nil || ms.MigrationConfiguration.DisableTLS == nil || !*ms.MigrationConfiguration.DisableTLS {
			return fmt.Errorf("migration %s: a plain connection, but migrations.disableTLS is not set: TLS is required", h.Migration)
		}
	case peer.Node != ms.SourceNode:
		return fmt.Errorf("migration %s comes from node %q, and the certificate names node %q", h.Migration, ms.SourceNode, peer.Node)
	}
	if ms.Completed || ms.Failed {
		return fmt.Errorf("migration %s is over", h.Migration)
	}
	return nil
}
