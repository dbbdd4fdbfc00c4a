package node

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/virtkit/virtkit/deploy/certs"
)

// The kubelet API serves only a client certificate of its CA with one of
// its users' names: a handshake without one fails, another user gets 403,
// the apiserver's user reaches the routes (a pod the node does not run is
// 404).
func TestKubeletAPIAuth(t *testing.T) {
	now := time.Now()
	ca, err := certs.NewCA("test-ca", now, 24*time.Hour)
	must(t, err)
	pair := func(r certs.Request) tls.Certificate {
		t.Helper()
		r.Validity = 2 * time.Hour
		p, err := ca.Issue(r, now)
		must(t, err)
		c, err := tls.X509KeyPair(p.CertPEM(), p.KeyPEM())
		must(t, err)
		return c
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	srv, err := serveKubeletAPI(&Provider{}, &KubeletAPI{Certificate: pair(certs.Request{CommonName: "node", DNSNames: []string{"localhost"}, Server: true}),
		ClientCAs: pool, Users: []string{"kube-apiserver-kubelet-client"}}, "127.0.0.1")
	must(t, err)
	defer srv.close()
	url := "https://127.0.0.1:" + strconv.Itoa(srv.port) + "/containerLogs/default/nothere/compute"
	get := func(client *tls.Certificate) (int, string, error) {
		cfg := &tls.Config{RootCAs: pool, ServerName: "localhost"}
		if client != nil {
			cfg.Certificates = []tls.Certificate{*client}
		}
		resp, err := (&http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: 10 * time.Second}).Get(url)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return resp.StatusCode, string(b), nil
	}
	if code, _, err := get(nil); err == nil {
		t.Errorf("no client certificate: HTTP %d, want the handshake refused", code)
	}
	other := pair(certs.Request{CommonName: "someone", Client: true})
	if code, body, err := get(&other); err != nil || code != http.StatusForbidden {
		t.Errorf("another user: %d %q %v, want 403", code, body, err)
	}
	apiserver := pair(certs.Request{CommonName: "kube-apiserver-kubelet-client", Client: true})
	if code, body, err := get(&apiserver); err != nil || code != http.StatusNotFound {
		t.Errorf("the apiserver, a pod not on the node: %d %q %v, want 404", code, body, err)
	}
}
