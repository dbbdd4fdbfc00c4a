package frontproxy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// certs issues certificates for tests.
type certs struct {
	t    testing.TB
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newCerts(t testing.TB, cn string) *certs {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return &certs{t: t, cert: c, key: key}
}

func (c *certs) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(c.cert)
	return p
}

func (c *certs) client(cn string, usage x509.ExtKeyUsage) *x509.Certificate {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{usage}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		c.t.Fatal(err)
	}
	out, _ := x509.ParseCertificate(der)
	return out
}

func TestAuthenticator(t *testing.T) {
	ca, other := newCerts(t, "front-proxy-ca"), newCerts(t, "other-ca")
	fp := &Authenticator{ClientCA: ca.pool(), AllowedNames: []string{"front-proxy-client"}}
	headers := map[string][]string{
		"X-Remote-User":                   {"alice"},
		"X-Remote-Group":                  {"tenants", "system:authenticated"},
		"X-Remote-Extra-Scopes":           {"a", "b"},
		"X-Remote-Extra-Example.com%2fid": {"7"},
	}
	cases := []struct {
		name    string
		cert    *x509.Certificate
		headers map[string][]string
		want    User
		err     bool
	}{
		{"the aggregator", ca.client("front-proxy-client", x509.ExtKeyUsageClientAuth), headers,
			User{Name: "alice", Groups: []string{"tenants", "system:authenticated"}, Extra: map[string][]string{"scopes": {"a", "b"}, "example.com/id": {"7"}}}, false},
		{"no certificate", nil, headers, User{}, true},
		{"another CA", other.client("front-proxy-client", x509.ExtKeyUsageClientAuth), headers, User{}, true},
		{"a name not allowed", ca.client("intruder", x509.ExtKeyUsageClientAuth), headers, User{}, true},
		{"a server certificate", ca.client("front-proxy-client", x509.ExtKeyUsageServerAuth), headers, User{}, true},
		{"no user header", ca.client("front-proxy-client", x509.ExtKeyUsageClientAuth), map[string][]string{"X-Remote-Group": {"g"}}, User{}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest("PUT", "/", nil)
			r.TLS = &tls.ConnectionState{}
			if c.cert != nil {
				r.TLS.PeerCertificates = []*x509.Certificate{c.cert}
			}
			for k, vs := range c.headers {
				for _, v := range vs {
					r.Header.Add(k, v)
				}
			}
			got, err := fp.Authenticate(r)
			if (err != nil) != c.err {
				t.Fatalf("error %v, want error %v", err, c.err)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("user (-want +got):\n%s", diff)
			}
		})
	}
}
