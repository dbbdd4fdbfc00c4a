package upload_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/virtkit/virtkit/virt/storage/upload"
)

// TestSend: a clone's source pod sends with a self-signed client
// certificate the upload server trusts as its own CA, pinning the
// server's; a refused image is final, a busy server is not.
func TestSend(t *testing.T) {
	now := time.Now()
	srvCert, srvKey, err := upload.NewServerCert("cdi-upload-copy", now)
	if err != nil {
		t.Fatal(err)
	}
	cliCert, cliKey, err := upload.NewClientCert("proxy", now)
	if err != nil {
		t.Fatal(err)
	}
	serving, _ := tls.X509KeyPair(srvCert, srvKey)
	client, _ := tls.X509KeyPair(cliCert, cliKey)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(cliCert)
	var answer error
	got := make(chan string, 3)
	srv := upload.NewServer(func(_ context.Context, r *http.Request) error {
		b, _ := io.ReadAll(r.Body)
		got <- string(b)
		return answer
	}, func(err error) bool { return strings.Contains(err.Error(), "busy") }, "proxy")
	ts := httptest.NewUnstartedServer(srv)
	ts.TLS = upload.ServerTLS(serving, pool)
	ts.StartTLS()
	defer ts.Close()
	u, _ := url.Parse(ts.URL)
	cfg, err := upload.PinnedTLS(&tls.Config{Certificates: []tls.Certificate{client}}, srvCert)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	answer = errors.New("busy")
	if err := upload.Send(ctx, u, cfg, strings.NewReader("disk"), 4); err == nil || upload.IsFinal(err) {
		t.Errorf("busy server: %v, want a retryable error", err)
	}
	answer = errors.New("corrupt image")
	if err := upload.Send(ctx, u, cfg, strings.NewReader("disk"), 4); !upload.IsFinal(err) || !strings.Contains(err.Error(), "corrupt image") {
		t.Errorf("refused image: %v, want a final error saying why", err)
	}
	answer = nil
	if err := upload.Send(ctx, u, cfg, strings.NewReader("disk"), 4); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if b := <-got; b != "disk" {
			t.Errorf("sent %q, want disk", b)
		}
	}
	// Another client's certificate is not trusted.
	otherCert, otherKey, _ := upload.NewClientCert("proxy", now)
	other, _ := tls.X509KeyPair(otherCert, otherKey)
	cfg2, _ := upload.PinnedTLS(&tls.Config{Certificates: []tls.Certificate{other}}, srvCert)
	if err := upload.Send(ctx, u, cfg2, strings.NewReader("disk"), 4); err == nil {
		t.Error("a client certificate the server does not trust was accepted")
	}
}
