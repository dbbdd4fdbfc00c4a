package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"github.com/virtkit/virtkit/local/controlplane"
	"github.com/virtkit/virtkit/local/node"
)

// kubeletAPI is what local node name serves the apiserver with, as a
// kubelet does (pods/log, pods/portforward): a serving certificate of the
// cluster CA, and only the apiserver's kubelet client certificate served.
func (c *Cluster) kubeletAPI(name string) (node.KubeletAPI, error) {
	pki := c.cfg.PKI()
	certName := "kubelet-" + name
	if err := pki.EnsureServingCert(certName, name); err != nil {
		return node.KubeletAPI{}, fmt.Errorf("cluster: node %s: kubelet API certificate: %w", name, err)
	}
	cert, err := tls.LoadX509KeyPair(pki.Cert(certName), pki.Key(certName))
	if err != nil {
		return node.KubeletAPI{}, fmt.Errorf("cluster: node %s: kubelet API certificate: %w", name, err)
	}
	ca, err := os.ReadFile(pki.CACert())
	if err != nil {
		return node.KubeletAPI{}, fmt.Errorf("cluster: node %s: %w", name, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return node.KubeletAPI{}, fmt.Errorf("cluster: node %s: no certificate in %s", name, pki.CACert())
	}
	return node.KubeletAPI{Certificate: cert, ClientCAs: pool, Users: []string{controlplane.KubeletClientUser}}, nil
}
