package exportapi

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/virt/storage/export"
)

// NewProxyServer returns the export proxy's HTTPS server: the external
// links of exports (export.ProxyPrefix) forwarded to the servers r finds,
// checked against the export CA ca returns, and /healthz for probes;
// served over HTTP/1.1 with the certificate getCert returns, on a port of
// its own as KubeVirt's virt-exportproxy (export.NewHTTPServer says why
// not HTTP/2).
func NewProxyServer(r client.Reader, ca func() (*x509.CertPool, error), getCert func(*tls.ClientHelloInfo) (*tls.Certificate, error), log logr.Logger) *http.Server {
	mux := http.NewServeMux()
	mux.Handle(export.ProxyPrefix, export.NewProxy(Backends{Reader: r, CA: ca}, log))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	return export.NewHTTPServer(mux, getCert, log)
}
