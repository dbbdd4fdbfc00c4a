package export_test

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/go-logr/logr"

	"github.com/virtkit/virtkit/virt/storage/export"
	exporttoken "github.com/virtkit/virtkit/virt/storage/export/token"
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
