package export_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	exportv1 "kubevirt.io/api/export/v1beta1"

	exportctl "github.com/virtkit/virtkit/controllers/export"
	"github.com/virtkit/virtkit/deploy/certs"
	"github.com/virtkit/virtkit/virt/storage/export"
)

// TestIngressDiscovery: without an external host, a ready export lists
// only internal links until an Ingress of the install namespace routes to
// the export proxy's Service; then its external links point at the
// Ingress's host with the certificate of its TLS Secret, as KubeVirt's.
func TestIngressDiscovery(t *testing.T) {
	const install = "kubevirt"
	e := start(t, exportctl.WithIngressDiscovery(install))
	must(t, e.c.Create(e.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: install}}))
	e.claim(t, "disk", map[string]string{"cdi.kubevirt.io/storage.contentType": "kubevirt"})
	vme := e.create(t, "disk-export", nil, "PersistentVolumeClaim", "disk")
	e.playKubelet(t, e.pod(t, vme))
	e.wait(t, vme, "Ready with internal links only", func(st *exportv1.VirtualMachineExportStatus) bool {
		return st.Phase == exportv1.Ready && st.Links != nil && st.Links.Internal != nil && st.Links.External == nil
	})

	ingressCA, err := certs.NewCA("ingress-ca", time.Now(), 48*time.Hour)
	must(t, err)
	leaf, err := ingressCA.Issue(certs.Request{CommonName: "vm-export.example.test", DNSNames: []string{"vm-export.example.test"}, Server: true, Validity: 24 * time.Hour}, time.Now())
	must(t, err)
	must(t, e.c.Create(e.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: install, Name: "export-tls"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: leaf.CertPEM(), corev1.TLSPrivateKeyKey: leaf.KeyPEM()}}))
	pathType := networkingv1.PathTypePrefix
	must(t, e.c.Create(e.ctx, &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: install, Name: "export"},
		Spec: networkingv1.IngressSpec{TLS: []networkingv1.IngressTLS{{Hosts: []string{"vm-export.example.test"}, SecretName: "export-tls"}},
			Rules: []networkingv1.IngressRule{{Host: "vm-export.example.test", IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
				Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &pathType, Backend: networkingv1.IngressBackend{
					Service: &networkingv1.IngressServiceBackend{Name: export.ProxyServiceName, Port: networkingv1.ServiceBackendPort{Number: 443}}}}}}}}}}}))
	e.wait(t, vme, "external links through the Ingress", func(st *exportv1.VirtualMachineExportStatus) bool {
		return st.Links != nil && st.Links.External != nil && len(st.Links.External.Volumes) == 1 &&
			strings.HasPrefix(st.Links.External.Volumes[0].Formats[0].Url, "https://vm-export.example.test/api/export.kubevirt.io/v1beta1/namespaces/default/virtualmachineexports/disk-export/")
	})
	if got, want := strings.TrimSpace(vme.Status.Links.External.Cert), strings.TrimSpace(string(leaf.CertPEM())); got != want {
		t.Errorf("external links' certificate:\n%s\nwant the Ingress's:\n%s", got, want)
	}
}
