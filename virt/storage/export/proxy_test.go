package export_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/virtkit/virtkit/virt/storage/export"
	exporttoken "github.com/virtkit/virtkit/virt/storage/export/token"
	"github.com/virtkit/virtkit/virt/storage/upload"
)

type backends map[string]export.Backend

func (b backends) Backend(_ context.Context, ns, name string) (export.Backend, error) {
	switch be, ok := b[ns+"/"+name]; {
	case name == "starting":
		return export.Backend{}, export.ErrNotReady
	case !ok:
		return export.Backend{}, export.ErrNoExport
	default:
		return be, nil
	}
}

// Through the proxy, as a client outside the cluster downloads: the path
// after the export's name goes to its server with the token; the proxy's
// own answers say what is missing.
func TestProxy(t *testing.T) {
	s := serve(t)
	u, err := url.Parse(s.base)
	if err != nil {
		t.Fatal(err)
	}
	tr := s.client.Transport.(*http.Transport)
	p := export.NewProxy(backends{"ns/e": {URL: u, TLS: tr.TLSClientConfig}}, logr.Discard())
	front := httptest.NewTLSServer(p)
	defer front.Close()
	cl := front.Client()
	cl.Transport.(*http.Transport).TLSClientConfig = &tls.Config{InsecureSkipVerify: true} // the test's own front
	get := func(path, tok string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, front.URL+path, nil)
		if tok != "" {
			req.Header.Set(exporttoken.Header, tok)
		}
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	base := "/api/export.kubevirt.io/v1beta1/namespaces/ns/virtualmachineexports/e"
	if code, b := get(base+export.RawPath("disk"), token); code != http.StatusOK || len(b) != len(s.image) {
		t.Errorf("raw through the proxy: %d, %d bytes; want 200 and %d", code, len(b), len(s.image))
	}
	if code, _ := get(base+export.RawPath("disk"), ""); code != http.StatusUnauthorized {
		t.Errorf("no token through the proxy: %d, want the server's 401", code)
	}
	// The dir link, without its slash, redirects to the listing under the
	// export's prefix, not to the proxy's root.
	if code, b := get(base+export.DirPath("files"), token); code != http.StatusOK || !strings.Contains(string(b), "a.txt") {
		t.Errorf("dir link through the proxy: %d %q, want the listing", code, b)
	}
	if code, _ := get("/api/export.kubevirt.io/v1/namespaces/ns/virtualmachineexports/e"+export.ReadyPath, ""); code != http.StatusOK {
		t.Errorf("v1 path: %d, want 200", code)
	}
	for path, want := range map[string]int{
		"/api/export.kubevirt.io/v1beta1/namespaces/ns/virtualmachineexports/other/volumes/disk/disk.img":    http.StatusNotFound,
		"/api/export.kubevirt.io/v1beta1/namespaces/ns/virtualmachineexports/starting/volumes/disk/disk.img": http.StatusServiceUnavailable,
		"/api/export.kubevirt.io/v2/namespaces/ns/virtualmachineexports/e/volumes/disk/disk.img":             http.StatusBadRequest,
		"/api/export.kubevirt.io/v1beta1/namespaces/ns/virtualmachineexports/e":                              http.StatusBadRequest,
	} {
		if code, _ := get(path, token); code != want {
			t.Errorf("GET %s: %d, want %d", path, code, want)
		}
	}
}

// The proxy keeps one transport per export server: a client's requests
// share a connection to the server, until the CA bundle the server is
// checked against changes.
func TestProxyReusesConnections(t *testing.T) {
	var conns atomic.Int32
	back := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }))
	back.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	back.StartTLS()
	defer back.Close()
	u, err := url.Parse(back.URL)
	if err != nil {
		t.Fatal(err)
	}
	roots := func() *x509.CertPool {
		p := x509.NewCertPool()
		p.AddCert(back.Certificate())
		return p
	}
	be := backends{"ns/e": {URL: u, TLS: &tls.Config{RootCAs: roots(), ServerName: "example.com"}}}
	front := httptest.NewTLSServer(export.NewProxy(be, logr.Discard()))
	defer front.Close()
	get := func() {
		t.Helper()
		resp, err := front.Client().Get(front.URL + "/api/export.kubevirt.io/v1beta1/namespaces/ns/virtualmachineexports/e" + export.ReadyPath)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if b, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusOK || string(b) != "ok" {
			t.Fatalf("through the proxy: %d %q", resp.StatusCode, b)
		}
	}
	for range 5 {
		get()
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("5 requests opened %d connections to the server, want 1", n)
	}
	// The same bundle read again (a new pool, equal) keeps the transport.
	be["ns/e"] = export.Backend{URL: u, TLS: &tls.Config{RootCAs: roots(), ServerName: "example.com"}}
	get()
	if n := conns.Load(); n != 1 {
		t.Errorf("an equal CA bundle opened a connection: %d, want 1", n)
	}
	// Another bundle: a new transport, checked against it.
	otherPEM, _, err := upload.NewServerCert("other.test", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	other := roots()
	other.AppendCertsFromPEM(otherPEM)
	be["ns/e"] = export.Backend{URL: u, TLS: &tls.Config{RootCAs: other, ServerName: "example.com"}}
	get()
	if n := conns.Load(); n != 2 {
		t.Errorf("a new CA bundle: %d connections, want 2", n)
	}
}
