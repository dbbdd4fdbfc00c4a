package export

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
)

func TestIngressHost(t *testing.T) {
	backend := func(svc string) networkingv1.IngressBackend {
		return networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: svc}}
	}
	rule := func(host string, svcs ...string) networkingv1.IngressRule {
		r := networkingv1.IngressRule{Host: host, IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{}}}
		for _, s := range svcs {
			r.HTTP.Paths = append(r.HTTP.Paths, networkingv1.HTTPIngressPath{Path: "/", Backend: backend(s)})
		}
		return r
	}
	for _, tc := range []struct {
		name string
		spec networkingv1.IngressSpec
		want string
	}{
		{"default backend", networkingv1.IngressSpec{DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: ProxyServiceName}},
			Rules: []networkingv1.IngressRule{{Host: "export.example.test"}}}, "export.example.test"},
		{"default backend without rules", networkingv1.IngressSpec{DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: ProxyServiceName}}}, ""},
		{"another default backend", networkingv1.IngressSpec{DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web"}},
			Rules: []networkingv1.IngressRule{rule("export.example.test", ProxyServiceName)}}, ""},
		{"a path to the proxy", networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{rule("web.example.test", "web"), rule("vm.example.test", "web", ProxyServiceName)}}, "vm.example.test"},
		{"a path to the proxy without a host", networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{rule("", ProxyServiceName)}}, ""},
		{"no route to the proxy", networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{rule("web.example.test", "web"), {Host: "bare.example.test"}}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := IngressHost(&networkingv1.Ingress{Spec: tc.spec}, ProxyServiceName); got != tc.want {
				t.Errorf("IngressHost = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestHostCert: the leaf for the host (by name or wildcard) with its
// issuer; without one, every certificate valid now; expired ones never.
func TestHostCert(t *testing.T) {
	now := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	ca, caKey := testCert(t, nil, nil, "ingress-ca", nil, now.Add(-time.Hour), now.Add(time.Hour), true)
	leaf, _ := testCert(t, ca, caKey, "export.example.test", []string{"export.example.test"}, now.Add(-time.Hour), now.Add(time.Hour), false)
	wild, _ := testCert(t, ca, caKey, "wild", []string{"*.example.test"}, now.Add(-time.Hour), now.Add(time.Hour), false)
	old, _ := testCert(t, ca, caKey, "old", []string{"export.example.test"}, now.Add(-2*time.Hour), now.Add(-time.Hour), false)
	pemOf := func(cs ...*x509.Certificate) string {
		var b strings.Builder
		for _, c := range cs {
			_ = pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
		}
		return strings.TrimSpace(b.String())
	}
	for _, tc := range []struct {
		name, host string
		chain      []*x509.Certificate
		want       string
	}{
		{"the host's leaf and its issuer", "export.example.test", []*x509.Certificate{old, ca, leaf}, pemOf(leaf, ca)},
		{"a wildcard", "other.example.test", []*x509.Certificate{wild, ca}, pemOf(wild, ca)},
		{"no match: all valid now", "elsewhere.test", []*x509.Certificate{old, leaf, ca}, pemOf(leaf, ca)},
		{"nothing valid", "export.example.test", []*x509.Certificate{old}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := HostCert(tc.host, []byte(pemOf(tc.chain...)), now); got != tc.want {
				t.Errorf("HostCert: got %d bytes, want %d bytes", len(got), len(tc.want))
			}
		})
	}
}

func testCert(t *testing.T, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, cn string, dns []string, from, to time.Time, isCA bool) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn}, DNSNames: dns,
		NotBefore: from, NotAfter: to, IsCA: isCA, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c, key
}
