package certs_test

import (
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
