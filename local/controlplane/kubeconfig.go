package controlplane

import (
	"fmt"
	"strconv"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// writeKubeconfigs writes the admin, scheduler and controller-manager
// kubeconfigs; they name the certificate files rather than embed them, so
// the PKI folder stays the one place the keys live.
func writeKubeconfigs(c Config) error {
	p := c.PKI()
	server := "https://127.0.0.1:" + strconv.Itoa(c.APIServerPort)
	for user, file := range map[string]string{
		"admin":              c.AdminKubeconfig(),
		"scheduler":          kubeconfigPath(c, "scheduler"),
		"controller-manager": kubeconfigPath(c, "controller-manager"),
	} {
		if err := writeKubeconfig(server, p, user, file); err != nil {
			return err
		}
	}
	return nil
}

// WriteKubeconfig writes file, a kubeconfig that reaches the apiserver with
// the client certificate PKI().Cert(cert) (see PKI.EnsureClientCert).
func (c Config) WriteKubeconfig(file, cert string) error {
	return writeKubeconfig("https://127.0.0.1:"+strconv.Itoa(c.APIServerPort), c.PKI(), cert, file)
}

func writeKubeconfig(server string, p PKI, user, file string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["virt-local"] = &clientcmdapi.Cluster{Server: server, CertificateAuthority: p.CACert()}
	kc.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificate: p.Cert(user), ClientKey: p.Key(user)}
	kc.Contexts["virt-local"] = &clientcmdapi.Context{Cluster: "virt-local", AuthInfo: user}
	kc.CurrentContext = "virt-local"
	if err := clientcmd.WriteToFile(*kc, file); err != nil {
		return fmt.Errorf("controlplane: kubeconfig %s: %w", file, err)
	}
	return nil
}

// RESTConfig is the administrator's client configuration.
func (c Config) RESTConfig() (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.AdminKubeconfig())
	if err != nil {
		return nil, fmt.Errorf("controlplane: %s: %w", c.AdminKubeconfig(), err)
	}
	return cfg, nil
}
