package cluster

import (
	"fmt"
	"path/filepath"

	"k8s.io/client-go/rest"

	"github.com/virtkit/virtkit/local/controlplane"
)

// ComponentsUser is the user the in-process components (virt-controller,
// the handlers, virt-api, the provisioner) reach the apiserver as: a
// member of system:masters, as the administrator, but another user, so that
// virt-api lets these components, and not the administrator, change a
// running VMI's spec as it lets virtkit's service accounts on a cluster.
const ComponentsUser = "virt-local-components"

// componentsCert names the components' client certificate in the PKI.
const componentsCert = "components"

// componentsKubeconfig is the components' kubeconfig (split mode's daemons
// use it), next to the administrator's.
func (c Config) componentsKubeconfig() string {
	return filepath.Join(c.controlPlaneDir(), "components.kubeconfig")
}

// componentsConfig is admin with the components' client certificate,
// issued once from the cluster's CA; the daemons of split mode read it
// from the kubeconfig file it writes.
func componentsConfig(admin *rest.Config, cp controlplane.Config, kubeconfig string) (*rest.Config, error) {
	pki := cp.PKI()
	if err := pki.EnsureClientCert(componentsCert, ComponentsUser, "system:masters"); err != nil {
		return nil, fmt.Errorf("cluster: the components' client certificate: %w", err)
	}
	if err := cp.WriteKubeconfig(kubeconfig, componentsCert); err != nil {
		return nil, fmt.Errorf("cluster: the components' kubeconfig: %w", err)
	}
	cfg := rest.CopyConfig(admin)
	cfg.TLSClientConfig.CertData, cfg.TLSClientConfig.KeyData = nil, nil
	cfg.TLSClientConfig.CertFile, cfg.TLSClientConfig.KeyFile = pki.Cert(componentsCert), pki.Key(componentsCert)
	return cfg, nil
}
