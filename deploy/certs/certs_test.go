package certs_test

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/virtkit/virtkit/deploy/certs"
)

var now = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

func newCA(t *testing.T) *certs.Pair {
	t.Helper()
	ca, err := certs.NewCA("test-ca", now, 7*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// A serving and a client certificate from one CA complete a mutual TLS
// handshake, each side checking the other's name.
func TestIssuedPairsSpeakMutualTLS(t *testing.T) {
	ca := newCA(t)
	server, err := ca.Issue(certs.Request{CommonName: "virt-handler", DNSNames: []string{"virt-handler.kubevirt.svc"},
		Server: true, Validity: 24 * time.Hour}, now)
	if err != nil {
		t.Fatal(err)
	}
	client, err := ca.Issue(certs.Request{CommonName: "virt-api", Client: true, Validity: 24 * time.Hour}, now)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	pair := func(p *certs.Pair) tls.Certificate {
		c, err := tls.X509KeyPair(p.CertPEM(), p.KeyPEM())
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	// The handshake's clock is the certificates' time.
	at := func() time.Time { return now.Add(time.Minute) }
	srvCfg := &tls.Config{Certificates: []tls.Certificate{pair(server)}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert, Time: at}
	cliCfg := &tls.Config{Certificates: []tls.Certificate{pair(client)}, RootCAs: pool, ServerName: "virt-handler.kubevirt.svc", Time: at}
	a, b := net.Pipe()
	errs := make(chan error, 1)
	go func() { errs <- tls.Server(a, srvCfg).Handshake() }()
	if err := tls.Client(b, cliCfg).Handshake(); err != nil {
		t.Fatalf("client handshake: %v", err)
	}
	if err := <-errs; err != nil {
		t.Fatalf("server handshake: %v", err)
	}
}

func TestParseRoundTripAndMismatch(t *testing.T) {
	ca := newCA(t)
	back, err := certs.Parse(ca.CertPEM(), ca.KeyPEM())
	if err != nil {
		t.Fatal(err)
	}
	if !back.Cert.Equal(ca.Cert) || !back.Key.Equal(ca.Key) {
		t.Error("Parse did not give back the pair")
	}
	other := newCA(t)
	if _, err := certs.Parse(ca.CertPEM(), other.KeyPEM()); err == nil || !strings.Contains(err.Error(), "not the certificate's") {
		t.Errorf("Parse of a foreign key = %v, want refused", err)
	}
	if _, err := certs.Parse([]byte("junk"), ca.KeyPEM()); err == nil {
		t.Error("Parse of junk succeeded")
	}
}

func TestDue(t *testing.T) {
	ca := newCA(t) // valid now-1h .. now+7d
	for _, tc := range []struct {
		at   time.Time
		want bool
	}{
		{now, false},
		{now.Add(4 * 24 * time.Hour), false},
		{now.Add(5*24*time.Hour + time.Second), true}, // less than 2 days left
		{now.Add(-2 * time.Hour), true},               // not yet valid
	} {
		if got := certs.Due(ca.Cert, tc.at, 2*24*time.Hour); got != tc.want {
			t.Errorf("Due at %s = %v, want %v", tc.at, got, tc.want)
		}
	}
}

func TestFits(t *testing.T) {
	ca := newCA(t)
	req := certs.Request{CommonName: "virt-api", DNSNames: []string{"virt-api.kubevirt.svc"}, Server: true, Validity: time.Hour * 24}
	leaf, err := ca.Issue(req, now)
	if err != nil {
		t.Fatal(err)
	}
	if !certs.Fits(leaf.Cert, ca.Cert, req) {
		t.Error("a leaf does not fit its own request")
	}
	changed := req
	changed.DNSNames = []string{"virt-api.other.svc"}
	if certs.Fits(leaf.Cert, ca.Cert, changed) {
		t.Error("a leaf fits a request with other names")
	}
	changed = req
	changed.Client = true
	if certs.Fits(leaf.Cert, ca.Cert, changed) {
		t.Error("a leaf fits a request with other usages")
	}
	if certs.Fits(leaf.Cert, newCA(t).Cert, req) {
		t.Error("a leaf fits another CA")
	}
}

// A leaf never outlives its CA.
func TestIssueClampsToTheCA(t *testing.T) {
	ca := newCA(t)
	leaf, err := ca.Issue(certs.Request{CommonName: "c", Client: true, Validity: 30 * 24 * time.Hour}, now)
	if err != nil {
		t.Fatal(err)
	}
	if !leaf.Cert.NotAfter.Equal(ca.Cert.NotAfter) {
		t.Errorf("leaf NotAfter = %s, CA's %s", leaf.Cert.NotAfter, ca.Cert.NotAfter)
	}
}

func TestRequestErrors(t *testing.T) {
	ca := newCA(t)
	for _, tc := range []struct {
		r    certs.Request
		want string
	}{
		{certs.Request{Client: true, Validity: time.Hour * 2}, "Request.CommonName: required"},
		{certs.Request{CommonName: "x", Validity: time.Hour * 2}, "Request.Server or Request.Client"},
		{certs.Request{CommonName: "x", Client: true}, "Request.Validity 0s"},
		{certs.Request{CommonName: "x", Server: true, Validity: time.Hour * 2}, "Request.DNSNames or Request.IPs"},
	} {
		if _, err := ca.Issue(tc.r, now); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Issue(%+v) = %v, want %q", tc.r, err, tc.want)
		}
	}
	if _, err := (&certs.Pair{Cert: &x509.Certificate{}}).Issue(certs.Request{CommonName: "x", Client: true, Validity: 2 * time.Hour}, now); err == nil {
		t.Error("a non-CA issued a certificate")
	}
}
