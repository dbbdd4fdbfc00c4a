package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/deploy/certs"
	"github.com/virtkit/virtkit/internal/scheme"
	"github.com/virtkit/virtkit/virtapi/nodeapi"
)

// localHandlerCert is the serving certificate of the local nodes' node
// APIs, for loopback.
const localHandlerCert = "virt-handler-local"

// serveNodeAPI serves the node API of a local node's handler on a loopback
// port, as a real handler does on its node: behind TLS that requires
// virt-api's client certificate (of the cluster's CA, named
// nodeapi.ClientName), published on the node's Node.
func (c *Cluster) serveNodeAPI(ctx context.Context, ln *localNode) error {
	pki := c.cp.Config().PKI()
	if err := pki.EnsureServingCert(localHandlerCert, nodeapi.ServerName(Namespace)); err != nil {
		return err
	}
	cert, err := tls.LoadX509KeyPair(pki.Cert(localHandlerCert), pki.Key(localHandlerCert))
	if err != nil {
		return fmt.Errorf("cluster: node %s: node API certificate: %w", ln.name, err)
	}
	ca, err := os.ReadFile(pki.CACert())
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	clients := x509.NewCertPool()
	if !clients.AppendCertsFromPEM(ca) {
		return fmt.Errorf("cluster: %s: no certificate", pki.CACert())
	}
	// A restarted node's handler listens where the first did: virt-api
	// found it there.
	addr := "127.0.0.1:0"
	if ln.apiURL != nil {
		addr = ln.apiURL.Host
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("cluster: node %s: node API: %w", ln.name, err)
	}
	ln.api = &http.Server{
		Handler:           nodeapi.NewServer(ln.handler, nodeapi.WithServerLogger(c.cfg.Logger.WithValues("node", ln.name).WithName("node-api"))),
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: clients,
			ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12,
			// The cluster's CA signs every local identity: only virt-api's may call.
			VerifyConnection: certs.PeerNamed(nodeapi.ClientName)},
	}
	if ln.apiURL == nil {
		ln.apiURL = &url.URL{Scheme: "https", Host: lis.Addr().String()}
	}
	as(ComponentHandler, func() { go func() { _ = ln.api.ServeTLS(lis, "", "") }() })
	cl, err := client.New(c.clientConfig(ComponentHandler), client.Options{Scheme: scheme.New()})
	if err != nil {
		return fmt.Errorf("cluster: node %s: %w", ln.name, err)
	}
	return publishWhenRegistered(ctx, cl, ln.name, ln.apiURL.String())
}

// publishWhenRegistered publishes address on node's Node, waiting up to
// 30 s for the node to register it.
func publishWhenRegistered(ctx context.Context, cl client.Client, node, address string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		err := nodeapi.Publish(ctx, cl, node, address)
		if err == nil {
			return nil
		}
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("cluster: %w", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: %w", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// stopNodeAPI closes a local node's node API: its open console and VNC
// streams end.
func (ln *localNode) stopNodeAPI() error {
	if ln.api == nil {
		return nil
	}
	return ln.api.Close()
}
