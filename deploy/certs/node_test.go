package certs_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/virtkit/virtkit/deploy/certs"
)

// A node's migration certificate names the node, and nothing else passes
// for one: another party's certificate, a name that is not a node's, or
// one with more DNS names than its own.
func TestNodeOf(t *testing.T) {
	ca := newCA(t)
	issue := func(r certs.Request) *certs.Pair {
		t.Helper()
		p, err := ca.Issue(r, now)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	day := 24 * time.Hour
	node := issue(certs.NodeRequest("node-b.example", day))
	if got, err := certs.NodeOf(node.Cert); err != nil || got != "node-b.example" {
		t.Fatalf("NodeOf = %q, %v; want node-b.example", got, err)
	}
	for name, r := range map[string]certs.Request{
		"virt-api's client": {CommonName: "kubevirt.io:system:client:virt-handler", Client: true, Validity: day},
		"handlers' shared":  {CommonName: "kubevirt.io:system:node:virt-handler", DNSNames: []string{"virt-handler.kubevirt.svc"}, Server: true, Validity: day},
		"suffix alone":      {CommonName: certs.NodeName(""), DNSNames: []string{certs.NodeName("")}, Server: true, Validity: day},
		"not a node name":   {CommonName: certs.NodeName("Node_B"), DNSNames: []string{certs.NodeName("Node_B")}, Server: true, Validity: day},
		"more names": {CommonName: certs.NodeName("b"), DNSNames: []string{certs.NodeName("b"), "virt-api.kubevirt.svc"},
			Server: true, Validity: day},
	} {
		got, err := certs.NodeOf(issue(r).Cert)
		if err == nil {
			t.Errorf("%s: NodeOf = %q, want an error", name, got)
		} else if !strings.Contains(err.Error(), r.CommonName) {
			t.Errorf("%s: error %q does not name the certificate %q", name, err, r.CommonName)
		}
	}
	if _, err := certs.NodeOf(nil); err == nil {
		t.Error("NodeOf(nil): want an error")
	}
}

// A node's certificate request round-trips to the node, and the CA's
// certificate for its key names the node; a request for more than the
// node's name is refused.
func TestNodeCSR(t *testing.T) {
	ca := newCA(t)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pemReq, err := certs.NodeCSR("node-b", key)
	if err != nil {
		t.Fatal(err)
	}
	node, pub, err := certs.ParseNodeCSR(pemReq)
	if err != nil || node != "node-b" {
		t.Fatalf("ParseNodeCSR = %q, %v", node, err)
	}
	cert, err := ca.Sign(pub, certs.NodeRequest(node, 24*time.Hour), now)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := certs.NodeOf(cert); err != nil || got != "node-b" {
		t.Fatalf("NodeOf(signed) = %q, %v", got, err)
	}
	if !cert.PublicKey.(*ecdsa.PublicKey).Equal(&key.PublicKey) {
		t.Error("the signed certificate is not of the request's key")
	}

	for name, tmpl := range map[string]*x509.CertificateRequest{
		"another name too": {Subject: pkix.Name{CommonName: certs.NodeName("b")}, DNSNames: []string{certs.NodeName("b"), "virt-api.kubevirt.svc"}},
		"an address":       {Subject: pkix.Name{CommonName: certs.NodeName("b")}, DNSNames: []string{certs.NodeName("b")}, IPAddresses: []net.IP{net.IPv4(10, 0, 0, 1)}},
		"a group":          {Subject: pkix.Name{CommonName: certs.NodeName("b"), Organization: []string{"system:masters"}}, DNSNames: []string{certs.NodeName("b")}},
		"not a node":       {Subject: pkix.Name{CommonName: "virt-api"}, DNSNames: []string{"virt-api"}},
	} {
		der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := certs.ParseNodeCSR(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})); err == nil {
			t.Errorf("%s: ParseNodeCSR accepted it", name)
		}
	}
	if _, _, err := certs.ParseNodeCSR([]byte("not PEM")); err == nil {
		t.Error("ParseNodeCSR accepted garbage")
	}
}
