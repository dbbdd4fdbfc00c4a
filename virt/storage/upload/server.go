package upload

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"sync"
)

// Server is the upload server of one claim, as an http.Handler: it takes
// POSTs to Path from a client whose certificate carries ClientName, one at
// a time, until one is stored, and answers HealthPath.
type Server struct {
	sink       func(ctx context.Context, r *http.Request) error
	retryable  func(error) bool
	clientName string

	mu   sync.Mutex
	busy bool
	done chan struct{}
}

var _ http.Handler = (*Server)(nil)

// NewServer returns a server storing uploads with sink, which reads the
// request's body (r.ContentLength bytes, or -1: unknown) and says whether
// it was stored. An error for which retryable says true (the stream broke
// off) answers 503 and one for which it says false (a corrupt image) 400;
// either way the server takes a new upload. Only clients
// whose verified certificate has common name clientName may upload: serve
// it with TLS that verifies client certificates (ServerTLS).
func NewServer(sink func(ctx context.Context, r *http.Request) error, retryable func(error) bool, clientName string) *Server {
	return &Server{sink: sink, retryable: retryable, clientName: clientName, done: make(chan struct{})}
}

// Done is closed once an upload has been stored.
func (s *Server) Done() <-chan struct{} { return s.done }

// ServerTLS is the TLS of an upload server with cert, verifying client
// certificates against clientCAs when given: the kubelet's readiness probe
// comes without one, the proxy with one.
func ServerTLS(cert tls.Certificate, clientCAs *x509.CertPool) *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: clientCAs, ClientAuth: tls.VerifyClientCertIfGiven, MinVersion: tls.VersionTLS12}
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == HealthPath {
		w.WriteHeader(http.StatusOK)
		return
	}
	if !isUpload(w, r, []string{Path}) {
		return
	}
	if err := s.authorize(r); err != nil {
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	if !s.start() {
		http.Error(w, "another upload is in progress or the image is already stored", http.StatusConflict)
		return
	}
	err := s.sink(r.Context(), r)
	s.finish(err == nil)
	switch {
	case err == nil:
		w.WriteHeader(http.StatusOK)
	case s.retryable(err):
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
	default:
		http.Error(w, err.Error(), http.StatusBadRequest)
	}
}

// authorize requires a verified client certificate naming clientName.
func (s *Server) authorize(r *http.Request) error {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 {
		return errors.New("uploads come through the upload proxy only (no verified client certificate)")
	}
	if cn := r.TLS.VerifiedChains[0][0].Subject.CommonName; cn != s.clientName {
		return fmt.Errorf("client %q may not upload", cn)
	}
	return nil
}

func (s *Server) start() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.done:
		return false
	default:
	}
	if s.busy {
		return false
	}
	s.busy = true
	return true
}

func (s *Server) finish(stored bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.busy = false
	if stored {
		close(s.done)
	}
}
