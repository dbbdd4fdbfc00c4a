package export_test

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/virtkit/virtkit/virt/storage/export"
	"github.com/virtkit/virtkit/virt/storage/upload"
)

// BenchmarkDownload streams 256 MiB from a server as the export server
// serves (export.NewHTTPServer) straight and through the export proxy, to
// a Go client, all TLS; b.SetBytes makes go test print each path's rate.
func BenchmarkDownload(b *testing.B) {
	const size = 256 << 20
	chunk := make([]byte, 1<<20)
	certPEM, keyPEM, err := upload.NewServerCert("export.test", time.Now())
	if err != nil {
		b.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		b.Fatal(err)
	}
	getCert := func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &cert, nil }
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	clientTLS := &tls.Config{RootCAs: pool, ServerName: "export.test"}
	listen := func(h http.Handler) string {
		srv := export.NewHTTPServer(h, getCert, logr.Discard())
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		go srv.ServeTLS(ln, "", "")
		b.Cleanup(func() { srv.Close() })
		return "https://" + ln.Addr().String()
	}
	server := listen(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(size))
		for n := 0; n < size; n += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	u, err := url.Parse(server)
	if err != nil {
		b.Fatal(err)
	}
	proxy := listen(export.NewProxy(backends{"ns/e": {URL: u, TLS: clientTLS}}, logr.Discard()))
	cl := &http.Client{Transport: &http.Transport{TLSClientConfig: clientTLS}}
	for _, path := range []struct{ name, url string }{
		{"straight", server + "/"},
		{"proxied", proxy + "/api/export.kubevirt.io/v1beta1/namespaces/ns/virtualmachineexports/e/volumes/disk/disk.img"},
	} {
		b.Run(path.name, func(b *testing.B) {
			b.SetBytes(size)
			for range b.N {
				resp, err := cl.Get(path.url)
				if err != nil {
					b.Fatal(err)
				}
				n, err := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err != nil || n != size {
					b.Fatalf("%d bytes, %v", n, err)
				}
			}
		})
	}
}
