package cluster

import (
	"fmt"

	"github.com/virtkit/virtkit/deploy/certs"
)

// migrationCert issues, once, node's migration certificate
// (certs.NodeRequest) from the cluster's CA, as on a cluster each node's
// handler has its own, and returns its files and the CA's: the local
// nodes' handlers migrate to each other over TCP with mutual TLS, each
// checking that the other is the migration's node.
func (c *Cluster) migrationCert(node string) (cert, key, ca string, err error) {
	pki := c.cfg.PKI()
	name := MigrationCertName(node)
	if err := pki.EnsureCert(name, certs.NodeRequest(node, 0 /* the PKI's own */)); err != nil {
		return "", "", "", fmt.Errorf("cluster: node %s: migration certificate: %w", node, err)
	}
	return pki.Cert(name), pki.Key(name), pki.CACert(), nil
}
