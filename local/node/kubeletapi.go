package node

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
)

// KubeletAPI is the kubelet's HTTPS API a node serves (WithKubeletAPI):
// the apiserver proxies pods/log and pods/portforward to it, as it does to
// a kubelet on the node address's KubeletEndpoint port. Exec and attach
// are answered as not supported.
type KubeletAPI struct {
	// Certificate is the server's. The apiserver checks it only when it
	// runs with --kubelet-certificate-authority.
	Certificate tls.Certificate
	// ClientCAs verify client certificates: a request without a verified
	// one is refused at the handshake.
	ClientCAs *x509.CertPool
	// Users are the common names of the client certificates served: the
	// apiserver's kubelet client (--kubelet-client-certificate), which
	// authorizes the user before it proxies. Anyone else gets 403.
	Users []string
	// Port is listened on at the node's address; 0 picks a free one.
	Port int
}

// WithKubeletAPI makes the node serve the kubelet API (KubeletAPI) and
// publish its port in the Node's status.daemonEndpoints.
func WithKubeletAPI(a KubeletAPI) Option { return func(o *options) { o.kubeletAPI = &a } }

// kubeletServer is a running KubeletAPI.
type kubeletServer struct {
	srv  *http.Server
	port int
}

// serveKubeletAPI listens on host and serves a's routes of p.
func serveKubeletAPI(p *Provider, a *KubeletAPI, host string) (*kubeletServer, error) {
	if len(a.Users) == 0 || a.ClientCAs == nil || len(a.Certificate.Certificate) == 0 {
		return nil, errors.New("node: KubeletAPI needs a Certificate, ClientCAs and Users")
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(a.Port)))
	if err != nil {
		return nil, fmt.Errorf("node: kubelet API: %w", err)
	}
	cfg := &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{a.Certificate},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    a.ClientCAs,
	}
	routes := api.PodHandler(api.PodHandlerConfig{
		GetContainerLogs:  p.GetContainerLogs,
		PortForward:       p.PortForward,
		RunInContainer:    p.RunInContainer,
		AttachToContainer: p.AttachToContainer,
	}, false)
	users := slices.Clone(a.Users)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || !slices.Contains(users, r.TLS.VerifiedChains[0][0].Subject.CommonName) {
			http.Error(w, "forbidden: only the apiserver's kubelet client is served", http.StatusForbidden)
			return
		}
		routes.ServeHTTP(w, r)
	})
	s := &kubeletServer{
		srv:  &http.Server{Handler: h, TLSConfig: cfg, ReadHeaderTimeout: 30 * time.Second},
		port: l.Addr().(*net.TCPAddr).Port,
	}
	go func() { _ = s.srv.Serve(tls.NewListener(l, cfg)) }()
	return s, nil
}

// close stops the listener and the open HTTP connections. A port-forward
// connection already upgraded (hijacked) is not the server's to close: it
// ends when its pod's side or its client does, or at its idle timeout.
func (s *kubeletServer) close() error {
	if s == nil {
		return nil
	}
	return s.srv.Close()
}

// PortForward connects stream to port in the pod's network namespace, at
// 127.0.0.1 as a kubelet's runtime does, so that a server that listens on
// loopback only is reached too. It returns when the pod's side closes, or
// ctx ends.
func (p *Provider) PortForward(ctx context.Context, namespace, podName string, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	r := p.get(namespace, podName)
	if r == nil {
		return errdefs.NotFoundf("pod %s/%s is not on this node", namespace, podName)
	}
	r.mu.Lock()
	netns := r.att.NetNS
	r.mu.Unlock()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port)))
	conn, err := dialIn(ctx, netns, addr)
	if err != nil {
		return fmt.Errorf("port-forward to %s/%s port %d: %w", namespace, podName, port, err)
	}
	defer conn.Close()
	done := make(chan error, 1)
	go func() {
		_, _ = io.Copy(conn, stream)
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.CloseWrite() // the client is done sending
		}
	}()
	go func() {
		_, err := io.Copy(stream, conn)
		done <- err
	}()
	select {
	case err = <-done:
	case <-ctx.Done():
	}
	return err
}
