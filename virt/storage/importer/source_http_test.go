package importer_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/virtkit/virtkit/virt/storage/importer"
	"github.com/virtkit/virtkit/virt/storage/importer/importertest"
)

// otherCA is a PEM certificate of a CA that signed nothing the test
// server holds.
func otherCA(t *testing.T) []byte {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "other CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// What the HTTP source refuses, and which of it is worth retrying. No
// error and no name shows the password.
func TestHTTPSourceErrors(t *testing.T) {
	s := newServer(t)
	s.put("disk", importertest.Disk())
	withUserInfo := s.source("/missing")
	withUserInfo.URL = strings.Replace(withUserInfo.URL, "https://", "https://"+user+":"+password+"@", 1)
	withUserInfo.Username, withUserInfo.Password = "", ""
	for _, tc := range []struct {
		name      string
		src       func() importer.HTTPSource
		reason    importer.Reason
		retryable bool
		says      []string // in the error
	}{
		{name: "not found", src: func() importer.HTTPSource { return s.source("/images/nothing") },
			reason: importer.ReasonRefused, says: []string{s.srv.URL + "/images/nothing", "404 Not Found"}},
		{name: "user info in the URL", src: func() importer.HTTPSource { return withUserInfo },
			reason: importer.ReasonRefused, says: []string{s.srv.URL + "/missing", "404"}},
		{name: "wrong password", src: func() importer.HTTPSource { src := s.source("/images/disk"); src.Password = "wrong"; return src },
			reason: importer.ReasonRefused, says: []string{"401 Unauthorized"}},
		{name: "no header", src: func() importer.HTTPSource { src := s.source("/images/disk"); src.Header = nil; return src },
			reason: importer.ReasonRefused, says: []string{"400 Bad Request"}},
		{name: "unavailable", src: func() importer.HTTPSource { return s.source("/unavailable") },
			reason: importer.ReasonUnreachable, retryable: true, says: []string{"503 Service Unavailable"}},
		{name: "wrong CA", src: func() importer.HTTPSource { src := s.source("/images/disk"); src.CABundle = otherCA(t); return src },
			reason: importer.ReasonRefused, says: []string{"certificate"}},
		{name: "system CAs", src: func() importer.HTTPSource { src := s.source("/images/disk"); src.CABundle = nil; return src },
			reason: importer.ReasonRefused, says: []string{"certificate"}},
		{name: "CA bundle without a certificate", src: func() importer.HTTPSource { src := s.source("/images/disk"); src.CABundle = []byte("junk"); return src },
			reason: importer.ReasonRefused, says: []string{"no PEM certificate"}},
		{name: "stalled body", src: func() importer.HTTPSource { src := s.source("/stall"); src.Stall = 200 * time.Millisecond; return src },
			reason: importer.ReasonUnreachable, retryable: true, says: []string{s.srv.URL + "/stall", "no data for 200ms"}},
		{name: "stalled body, own client", src: func() importer.HTTPSource {
			src := s.source("/stall")
			src.Client = s.srv.Client()
			src.Stall = 200 * time.Millisecond
			return src
		}, reason: importer.ReasonUnreachable, retryable: true, says: []string{"no data for 200ms"}},
		{name: "closed port", src: func() importer.HTTPSource { return importer.HTTPSource{URL: closedPort(t), Password: password} },
			reason: importer.ReasonUnreachable, retryable: true, says: []string{"connection refused"}},
		{name: "not http", src: func() importer.HTTPSource { return importer.HTTPSource{URL: "file:///etc/hostname"} },
			reason: importer.ReasonRefused, says: []string{"file:///etc/hostname", "http"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := tc.src()
			path := filepath.Join(t.TempDir(), "disk.img")
			_, err := importer.New().Import(context.Background(), src, importer.Target{Path: path, Size: 8 << 20})
			if got := importer.ReasonOf(err); got != tc.reason {
				t.Fatalf("Import: %v (reason %q), want reason %q", err, got, tc.reason)
			}
			if importer.IsRetryable(err) != tc.retryable {
				t.Errorf("IsRetryable(%v) = %v, want %v", err, !tc.retryable, tc.retryable)
			}
			for _, s := range tc.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
			if strings.Contains(err.Error(), password) || strings.Contains(src.String(), password) {
				t.Errorf("the password shows: error %q, source %q", err, src.String())
			}
		})
	}
}

// The source's String drops user information and keeps the rest.
func TestHTTPSourceString(t *testing.T) {
	for url, want := range map[string]string{
		"https://u:p@example.com/a/disk.img?x=1": "https://example.com/a/disk.img?x=1",
		"http://example.com:8080/disk.qcow2":     "http://example.com:8080/disk.qcow2",
		"://bad":                                 "(invalid URL)",
	} {
		if got := (importer.HTTPSource{URL: url}).String(); got != want {
			t.Errorf("String() of %q = %q, want %q", url, got, want)
		}
	}
}

// A given Client is used as is, and Open says the length.
func TestHTTPSourceClient(t *testing.T) {
	s := newServer(t)
	s.put("disk", importertest.Disk())
	src := s.source("/images/disk")
	src.CABundle = nil // the client's TLS settings are used instead
	src.Client = s.srv.Client()
	rc, size, err := src.Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	n, err := io.Copy(io.Discard, rc)
	if err != nil || n != importertest.DiskSize || size != importertest.DiskSize {
		t.Errorf("read %d bytes (%v) of a source of size %d; want %d", n, err, size, importertest.DiskSize)
	}
}

// TestProxyCABundle: the import proxy's CAs are trusted besides the
// source's (or the system's), as a TLS-intercepting proxy's certificate
// is: here the server's own certificate stands in for the proxy's.
func TestProxyCABundle(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("disk")) }))
	defer srv.Close()
	serverCA := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	for _, tc := range []struct {
		name        string
		ca, proxyCA []byte
		trusted     bool
	}{
		{"the system's roots only", nil, nil, false},
		{"the proxy's besides the system's", nil, serverCA, true},
		{"the proxy's besides a certConfigMap's", otherCA(t), serverCA, true},
		{"a certConfigMap's only", otherCA(t), nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, src := range []importer.Source{
				importer.HTTPSource{URL: srv.URL + "/disk.img", CABundle: tc.ca, ProxyCABundle: tc.proxyCA},
				importer.RegistrySource{Image: strings.TrimPrefix(srv.URL, "https://") + "/guest:v1", CABundle: tc.ca, ProxyCABundle: tc.proxyCA},
			} {
				_, _, err := read(t, src)
				refusedCert := importer.ReasonOf(err) == importer.ReasonRefused && strings.Contains(err.Error(), "certificate")
				if refusedCert == tc.trusted {
					t.Errorf("%T: error %v; want the server trusted: %v", src, err, tc.trusted)
				}
			}
		})
	}
	_, _, err := read(t, importer.HTTPSource{URL: srv.URL, ProxyCABundle: []byte("not PEM")})
	if importer.ReasonOf(err) != importer.ReasonRefused || !strings.Contains(err.Error(), "proxy's CA bundle") {
		t.Errorf("a proxy CA bundle without a certificate: %v", err)
	}
}
