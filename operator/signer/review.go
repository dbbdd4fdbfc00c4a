package signer

import (
	"crypto"
	"fmt"
	"slices"
	"time"

	certv1 "k8s.io/api/certificates/v1"

	"github.com/virtkit/virtkit/deploy"
	"github.com/virtkit/virtkit/deploy/certs"
)

// Grant is what an approved request gets: a certificate for Node, of Key,
// valid for Validity.
type Grant struct {
	Node     string
	Key      crypto.PublicKey
	Validity time.Duration
}

// Review decides a request for certs.NodeSigner: granted when it comes
// from user (virt-handler's service account) in a pod on the node it asks
// a certificate for, asks only for that node's name with the usages of a
// migration certificate, and for no less than an hour; the validity is
// the request's expirationSeconds, at most maxValidity. The error says why
// it is denied.
func Review(csr *certv1.CertificateSigningRequest, user string, maxValidity time.Duration) (Grant, error) {
	spec := csr.Spec
	if spec.SignerName != certs.NodeSigner {
		return Grant{}, fmt.Errorf("spec.signerName %q: not %s", spec.SignerName, certs.NodeSigner)
	}
	if spec.Username != user {
		return Grant{}, fmt.Errorf("spec.username %q: only %s may ask for a node's migration certificate", spec.Username, user)
	}
	nodes := spec.Extra[deploy.NodeNameExtra]
	if len(nodes) != 1 || nodes[0] == "" {
		return Grant{}, fmt.Errorf("spec.extra[%s] %q: the request must come with the token of a pod on one node", deploy.NodeNameExtra, nodes)
	}
	node, key, err := certs.ParseNodeCSR(spec.Request)
	if err != nil {
		return Grant{}, fmt.Errorf("spec.request: %w", err)
	}
	if node != nodes[0] {
		return Grant{}, fmt.Errorf("spec.request: asks for node %q's certificate, from a pod on node %q", node, nodes[0])
	}
	want := []certv1.KeyUsage{certv1.UsageDigitalSignature, certv1.UsageKeyEncipherment, certv1.UsageServerAuth, certv1.UsageClientAuth}
	for _, u := range spec.Usages {
		if !slices.Contains(want, u) {
			return Grant{}, fmt.Errorf("spec.usages: %q is not a usage of a migration certificate (%q)", u, want)
		}
	}
	if !slices.Contains(spec.Usages, certv1.UsageServerAuth) || !slices.Contains(spec.Usages, certv1.UsageClientAuth) {
		return Grant{}, fmt.Errorf("spec.usages %q: a migration certificate serves and is a client (%q and %q)", spec.Usages, certv1.UsageServerAuth, certv1.UsageClientAuth)
	}
	validity := maxValidity
	if spec.ExpirationSeconds != nil {
		asked := time.Duration(*spec.ExpirationSeconds) * time.Second
		if asked <= time.Hour {
			return Grant{}, fmt.Errorf("spec.expirationSeconds %d: must be more than an hour", *spec.ExpirationSeconds)
		}
		validity = min(validity, asked)
	}
	return Grant{Node: node, Key: key, Validity: validity}, nil
}
