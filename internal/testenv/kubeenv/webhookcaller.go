package kubeenv

import (
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/virtkit/virtkit/local/controlplane"

	"github.com/virtkit/virtkit/internal/testenv"
)

// WebhookCaller makes the test's apiserver present a client certificate
// to every webhook it calls, as a cluster administrator's
// AdmissionConfiguration does, so that a webhook can tell the apiserver's
// calls from anyone else's:
//
//	caller := kubeenv.NewWebhookCaller(t)
//	cp := kubeenv.ControlPlane(t, caller.ControlPlaneOption(), kubeenv.WithWebhooks(...))
//	// the webhook trusts calls whose certificate caller.ClientCA signed for caller.Name
type WebhookCaller struct {
	// ClientCA verifies the certificate; Name is its common name.
	ClientCA *x509.CertPool
	Name     string

	config string
}

// NewWebhookCaller makes the certificate and the apiserver's admission
// configuration.
func NewWebhookCaller(t testing.TB) *WebhookCaller {
	t.Helper()
	dir := testenv.Dir(t)
	authority, err := newCA("webhook-caller-ca")
	if err != nil {
		t.Fatal(err)
	}
	w := &WebhookCaller{ClientCA: x509.NewCertPool(), Name: FrontProxyClientName, config: filepath.Join(dir, "admission.yaml")}
	w.ClientCA.AddCert(authority.cert)
	leaf, err := authority.issue(w.Name, nil, nil, x509.ExtKeyUsageClientAuth)
	if err != nil {
		t.Fatal(err)
	}
	cert, key, kubeconfig := filepath.Join(dir, "caller.crt"), filepath.Join(dir, "caller.key"), filepath.Join(dir, "webhooks.kubeconfig")
	// '*' is the kubeconfig's default entry: every webhook host.
	kc := fmt.Sprintf("apiVersion: v1\nkind: Config\nusers:\n- name: '*'\n  user:\n    client-certificate: %q\n    client-key: %q\n", cert, key)
	for name, b := range map[string][]byte{
		cert: leaf.certPEM, key: leaf.keyPEM, kubeconfig: []byte(kc),
		w.config: controlplane.AdmissionConfiguration(kubeconfig),
	} {
		if err := os.WriteFile(name, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// ControlPlaneOption points the apiserver at the admission configuration.
func (w *WebhookCaller) ControlPlaneOption() ControlPlaneOption {
	return func(env *envtest.Environment) {
		env.ControlPlane.GetAPIServer().Configure().Set("admission-control-config-file", w.config)
	}
}
