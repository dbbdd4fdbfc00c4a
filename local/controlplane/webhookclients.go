package controlplane

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// admissionConfigPath is the apiserver's --admission-control-config-file.
func admissionConfigPath(c Config) string { return filepath.Join(c.DataDir, "admission.yaml") }

// webhookClientsPath is the kubeconfig it names: how the apiserver
// authenticates to each webhook host.
func webhookClientsPath(c Config) string {
	return filepath.Join(c.DataDir, "webhook-clients.kubeconfig")
}

// writeWebhookClients writes the apiserver's admission configuration: to
// each of Config.WebhookClientHosts its webhooks present the front-proxy
// client certificate, as a cluster administrator configures it with an
// AdmissionConfiguration whose kubeconfig names the webhook hosts. Nothing
// is written without hosts.
func writeWebhookClients(c Config) error {
	if len(c.WebhookClientHosts) == 0 {
		return nil
	}
	p := c.PKI()
	kc := clientcmdapi.NewConfig()
	for _, host := range c.WebhookClientHosts {
		kc.AuthInfos[host] = &clientcmdapi.AuthInfo{ClientCertificate: p.Cert(FrontProxyClientCert), ClientKey: p.Key(FrontProxyClientCert)}
	}
	if err := clientcmd.WriteToFile(*kc, webhookClientsPath(c)); err != nil {
		return fmt.Errorf("controlplane: webhook client kubeconfig: %w", err)
	}
	if err := os.WriteFile(admissionConfigPath(c), AdmissionConfiguration(webhookClientsPath(c)), 0o600); err != nil {
		return fmt.Errorf("controlplane: admission configuration: %w", err)
	}
	return nil
}

// AdmissionConfiguration is the apiserver's --admission-control-config-file
// document that authenticates its validating and mutating webhook calls
// with the users of the kubeconfig webhookKubeconfig, each named after the
// webhook host it is for ('*' for all).
func AdmissionConfiguration(webhookKubeconfig string) []byte {
	doc := "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n"
	for _, plugin := range []string{"ValidatingAdmissionWebhook", "MutatingAdmissionWebhook"} {
		doc += fmt.Sprintf("- name: %s\n  configuration:\n    apiVersion: apiserver.config.k8s.io/v1\n    kind: WebhookAdmissionConfiguration\n    kubeConfigFile: %q\n",
			plugin, webhookKubeconfig)
	}
	return []byte(doc)
}
