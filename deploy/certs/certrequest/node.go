package certrequest

import (
	"crypto"
	"crypto/x509"

	certv1 "k8s.io/api/certificates/v1"

	"github.com/virtkit/virtkit/deploy/certs"
)

// maxPrefix keeps generated request names within a DNS subdomain's 253
// characters.
const maxPrefix = 200

// NodeConfig is the Config of node's migration certificate (certs.NodeCSR
// for signer certs.NodeSigner), kept in dir and checked against the CA
// bundle caFile.
func NodeConfig(node, dir, caFile string) Config {
	prefix := "virt-handler-migration-" + node
	if len(prefix) > maxPrefix {
		prefix = prefix[:maxPrefix]
	}
	return Config{
		SignerName: certs.NodeSigner,
		Request:    func(key crypto.Signer) ([]byte, error) { return certs.NodeCSR(node, key) },
		Fits: func(c *x509.Certificate) bool {
			n, err := certs.NodeOf(c)
			return err == nil && n == node
		},
		Usages:     []certv1.KeyUsage{certv1.UsageDigitalSignature, certv1.UsageKeyEncipherment, certv1.UsageServerAuth, certv1.UsageClientAuth},
		NamePrefix: prefix + "-",
		Dir:        dir,
		CAFile:     caFile,
	}
}
