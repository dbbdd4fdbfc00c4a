package export

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"sync"
	"time"

	"github.com/go-logr/logr"
)

// ProxyPrefix is where the export proxy serves: external links are
// ProxyPrefix/<version>/namespaces/<ns>/virtualmachineexports/<name>/<path>
// (ExternalBase).
const ProxyPrefix = "/api/" + "export.kubevirt.io/"

// proxyPath is an export proxy request's path, as KubeVirt's proxy reads
// it: either API version, the namespace, the export, and the path on the
// export's server.
var proxyPath = regexp.MustCompile(`^/api/export\.kubevirt\.io/(v1beta1|v1)/namespaces/([a-z0-9][-a-z0-9]*)/virtualmachineexports/([a-z0-9][-a-z0-9.]*)(/.*)$`)

// ErrNotReady is wrapped by a Backends error when the export exists but
// its server is not ready; the proxy answers 503.
var ErrNotReady = errors.New("the export is not ready")

// ErrNoExport is wrapped by a Backends error when there is no such
// export; the proxy answers 404.
var ErrNoExport = errors.New("no such export")

// A Backend is where an export's server is reached, and how its
// certificate is checked.
type Backend struct {
	URL *url.URL
	TLS *tls.Config
}

// Backends finds the server of an export.
type Backends interface {
	Backend(ctx context.Context, namespace, name string) (Backend, error)
}

// Proxy is the export proxy as an http.Handler serving ProxyPrefix: it
// forwards each request to its export's server, token and all (the server
// checks it), and streams the answer back.
type Proxy struct {
	backends   Backends
	log        logr.Logger
	transports *transports
}

var _ http.Handler = (*Proxy)(nil)

// NewProxy returns a proxy to the servers b finds, logging to log.
func NewProxy(b Backends, log logr.Logger) *Proxy {
	return &Proxy{backends: b, log: log, transports: &transports{m: map[string]transport{}}}
}

// ServeHTTP implements http.Handler.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m := proxyPath.FindStringSubmatch(r.URL.Path)
	if m == nil {
		http.Error(w, "not an export path: want "+ProxyPrefix+"{v1beta1,v1}/namespaces/<namespace>/virtualmachineexports/<name>/<path>", http.StatusBadRequest)
		return
	}
	ns, name, rest := m[2], m[3], m[4]
	be, err := p.backends.Backend(r.Context(), ns, name)
	switch {
	case errors.Is(err, ErrNotReady):
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	case errors.Is(err, ErrNoExport):
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	case err != nil:
		p.log.Error(err, "finding an export's server", "namespace", ns, "export", name)
		http.Error(w, fmt.Sprintf("finding the server of export %s/%s failed", ns, name), http.StatusInternalServerError)
		return
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host, pr.Out.Host = be.URL.Scheme, be.URL.Host, ""
			pr.Out.URL.Path, pr.Out.URL.RawPath = rest, ""
		},
		Transport: p.transports.to(be),
		// Large reads and writes: a disk is streamed, and every write is
		// a TLS record on each side.
		BufferPool: bufferPool{},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			p.log.Error(err, "proxying to an export's server", "namespace", ns, "export", name)
			http.Error(w, fmt.Sprintf("the server of export %s/%s could not be reached", ns, name), http.StatusBadGateway)
		},
	}
	rp.ServeHTTP(w, r)
}

// maxTransports bounds the transports a proxy keeps: one per export
// server it talks to, so that a client's requests to one export (the
// readiness check, the manifests, the disks) share connections.
const maxTransports = 64

// transports are the proxy's transports to export servers, by address and
// certificate name; one whose CA bundle changed is made again.
type transports struct {
	mu sync.Mutex
	m  map[string]transport
}

type transport struct {
	roots *x509.CertPool
	t     *http.Transport
}

func (ts *transports) to(be Backend) *http.Transport {
	if be.TLS == nil {
		be.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	key := be.URL.Host + "|" + be.TLS.ServerName
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if t, ok := ts.m[key]; ok && t.roots.Equal(be.TLS.RootCAs) {
		return t.t
	}
	if old, ok := ts.m[key]; ok {
		old.t.CloseIdleConnections()
		delete(ts.m, key)
	}
	for k, t := range ts.m {
		if len(ts.m) < maxTransports {
			break
		}
		t.t.CloseIdleConnections()
		delete(ts.m, k)
	}
	t := &http.Transport{TLSClientConfig: be.TLS, IdleConnTimeout: 30 * time.Second, MaxIdleConnsPerHost: 4,
		WriteBufferSize: copyBuffer, ReadBufferSize: copyBuffer, ResponseHeaderTimeout: time.Minute}
	ts.m[key] = transport{roots: be.TLS.RootCAs, t: t}
	return t
}

// bufferPool lends the reverse proxy copy buffers of copyBuffer bytes.
type bufferPool struct{}

var buffers = sync.Pool{New: func() any { return make([]byte, copyBuffer) }}

func (bufferPool) Get() []byte { return buffers.Get().([]byte) }

func (bufferPool) Put(b []byte) {
	//lint:ignore SA6002 the slice header is copied; the array it points at is what the pool keeps
	buffers.Put(b)
}
