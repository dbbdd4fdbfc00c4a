package registry

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
)

// Registry is a running registry. Start one with Start; Stop ends it.
type Registry struct {
	cfg     Config
	handler *handler
	ln      net.Listener
	srv     *http.Server
	// served is closed when the server's Serve returned serveErr.
	served   chan struct{}
	serveErr error

	// fresh are the connections that have not sent a request yet, which
	// Stop closes: http.Server.Shutdown would wait 5 s for each (clients
	// such as go-containerregistry's open a spare one while they probe).
	mu       sync.Mutex
	stopping bool
	fresh    map[net.Conn]bool
}

// Start opens (or makes) the registry's folder and serves the registry on
// cfg.Addr until Stop. It returns once the address is bound, so a taken
// port is an error here; ctx bounds the start only.
func Start(ctx context.Context, cfg Config) (*Registry, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	// Listen first: a registry already serving the folder keeps its uploads.
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("registry: listen on %s: %w (is another virt-local or registry running? choose another address)", cfg.Addr, err)
	}
	h, err := newHandler(cfg.Dir, cfg.Logger)
	if err != nil {
		ln.Close()
		return nil, err
	}
	r := &Registry{cfg: cfg, handler: h, ln: ln, served: make(chan struct{}), fresh: map[net.Conn]bool{}}
	r.srv = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ConnState: r.connState,
		ErrorLog: log.New(logWriter{cfg.Logger}, "", 0)}
	go func() {
		r.serveErr = r.srv.Serve(ln)
		close(r.served)
	}()
	cfg.Logger.Info("serving", "address", r.Addr(), "dir", cfg.Dir)
	return r, nil
}

// Addr is the host:port the registry listens on (with Config.Addr's port
// 0, the port picked).
func (r *Registry) Addr() string { return r.ln.Addr().String() }

// Config is the configuration the registry runs with, defaults applied.
func (r *Registry) Config() Config { return r.cfg }

// Stop stops accepting connections, waits for the requests in progress
// until ctx ends (then cuts them), and discards unfinished uploads.
// Everything pushed stays in Config.Dir. Stopping again does nothing.
func (r *Registry) Stop(ctx context.Context) error {
	r.mu.Lock()
	r.stopping = true
	for c := range r.fresh {
		c.Close()
	}
	r.mu.Unlock()
	err := r.srv.Shutdown(ctx)
	if err != nil {
		err = errors.Join(fmt.Errorf("registry: requests still running: %w", err), r.srv.Close())
	}
	<-r.served
	if !errors.Is(r.serveErr, http.ErrServerClosed) {
		err = errors.Join(err, fmt.Errorf("registry: %w", r.serveErr))
	}
	r.handler.uploads.close()
	r.cfg.Logger.Info("stopped", "address", r.Addr())
	return err
}

func (r *Registry) connState(c net.Conn, s http.ConnState) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case s == http.StateNew && r.stopping:
		c.Close()
	case s == http.StateNew:
		r.fresh[c] = true
	default:
		delete(r.fresh, c)
	}
}

// logWriter sends the HTTP server's own complaints (bad requests on the
// wire) to the logger, at V(1).
type logWriter struct{ log logr.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.log.V(1).Info(strings.TrimSpace(string(p)))
	return len(p), nil
}
