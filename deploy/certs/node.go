package certs

import (
	"crypto/x509"
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
