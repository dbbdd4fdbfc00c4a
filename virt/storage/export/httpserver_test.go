package export_test

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/virtkit/virtkit/virt/storage/export"
	"github.com/virtkit/virtkit/virt/storage/upload"
)

// A client that offers HTTP/2 (as curl and Go's clients do) is answered
// over HTTP/1.1 by the export server and proxy, with the certificate
// getCert returns.
func TestHTTPServerSpeaksHTTP1(t *testing.T) {
	certPEM, keyPEM, err := upload.NewServerCert("export.test", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	srv := export.NewHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, r.Proto) }),
		func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &cert, nil }, logr.Discard())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.ServeTLS(ln, "", "")
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	cl := &http.Client{Transport: &http.Transport{ForceAttemptHTTP2: true,
		TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "export.test", NextProtos: []string{"h2", "http/1.1"}}}}
	resp, err := cl.Get("https://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.ProtoMajor != 1 || string(b) != "HTTP/1.1" || resp.TLS.NegotiatedProtocol == "h2" {
		t.Errorf("answered over %s (handler saw %q, ALPN %q), want HTTP/1.1", resp.Proto, b, resp.TLS.NegotiatedProtocol)
	}
}
