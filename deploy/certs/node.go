package certs

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// nodeSuffix ends the name of a node's migration certificate: the
// node's name comes before it. No certificate of another party (virt-api's
// Service names, the handlers' shared node API name, a client's user) ends
// so.
const nodeSuffix = ".migration.kubevirt.io"

// NodeName is the name a node's migration certificate carries, as its
// common name and only DNS name: the identity handlers check of each other
// when one migrates a guest to the other.
func NodeName(node string) string { return node + nodeSuffix }

// NodeRequest is the request of node's migration certificate, valid for
// validity: it serves (the target's handler) and is a client (the
// source's), under the one name NodeName(node).
func NodeRequest(node string, validity time.Duration) Request {
	name := NodeName(node)
	return Request{CommonName: name, DNSNames: []string{name}, Server: true, Client: true, Validity: validity}
}

// NodeOf returns the node a migration certificate, already verified
// against the cluster's CA, was issued to: its common name and its only
// DNS name must both be NodeName of one valid node name.
func NodeOf(c *x509.Certificate) (string, error) {
	if c == nil {
		return "", errors.New("certs: no certificate")
	}
	cn := c.Subject.CommonName
	node, ok := strings.CutSuffix(cn, nodeSuffix)
	switch {
	case !ok || node == "":
		return "", fmt.Errorf("certs: %q is not a node's migration certificate (its name must be NODE%s)", cn, nodeSuffix)
	case len(validation.IsDNS1123Subdomain(node)) > 0:
		return "", fmt.Errorf("certs: %q does not name a valid node", cn)
	case !slices.Equal(c.DNSNames, []string{cn}):
		return "", fmt.Errorf("certs: %q: its DNS names %q are not its common name alone", cn, c.DNSNames)
	}
	return node, nil
}

// NodeSigner is the signerName of the Kubernetes CertificateSigningRequests
// for nodes' migration certificates: virt-handler asks for its node's, and
// virt-operator approves and signs a request only from virt-handler's
// service account on that node (operator/signer).
const NodeSigner = "kubevirt.io/virt-handler-migration"

// maxCSRSize bounds a certificate request: one of a P-256 key with one name
// is well under 1 KiB.
const maxCSRSize = 16 << 10

// NodeCSR is the PEM certificate request of node's migration certificate
// for key.
func NodeCSR(node string, key crypto.Signer) ([]byte, error) {
	name := NodeName(node)
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: name}, DNSNames: []string{name}}, key)
	if err != nil {
		return nil, fmt.Errorf("certs: request of %s: %w", name, err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), nil
}

// ParseNodeCSR reads a PEM certificate request made by NodeCSR, checks its
// signature and that it asks for one node's migration certificate and
// nothing more (no other name, address, e-mail or URI), and returns the
// node and the request's key.
func ParseNodeCSR(b []byte) (node string, pub crypto.PublicKey, err error) {
	if len(b) > maxCSRSize {
		return "", nil, fmt.Errorf("certs: a certificate request of %d bytes (at most %d)", len(b), maxCSRSize)
	}
	block, rest := pem.Decode(b)
	if block == nil || block.Type != "CERTIFICATE REQUEST" || len(strings.TrimSpace(string(rest))) > 0 {
		return "", nil, errors.New("certs: not one PEM CERTIFICATE REQUEST")
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return "", nil, fmt.Errorf("certs: certificate request: %w", err)
	}
	if err := req.CheckSignature(); err != nil {
		return "", nil, fmt.Errorf("certs: certificate request: %w", err)
	}
	cn := req.Subject.CommonName
	node, ok := strings.CutSuffix(cn, nodeSuffix)
	switch {
	case !ok || node == "" || len(validation.IsDNS1123Subdomain(node)) > 0:
		return "", nil, fmt.Errorf("certs: certificate request of %q: not a node's migration certificate (NODE%s)", cn, nodeSuffix)
	case !slices.Equal(req.DNSNames, []string{cn}) || len(req.IPAddresses) > 0 || len(req.EmailAddresses) > 0 || len(req.URIs) > 0 ||
		len(req.Subject.Organization) > 0 || len(req.Subject.OrganizationalUnit) > 0:
		return "", nil, fmt.Errorf("certs: certificate request of %q: it must name %q alone, as common name and DNS name", cn, cn)
	}
	return node, req.PublicKey, nil
}
