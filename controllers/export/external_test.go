package export_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	exportv1 "kubevirt.io/api/export/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exportctl "github.com/virtkit/virtkit/controllers/export"
	"github.com/virtkit/virtkit/deploy/certs"
	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/virt/storage/export"
)

// TestIngressDiscovery: without an external host, a ready export lists
// only internal links until an Ingress of the install namespace routes to
// the export proxy's Service; then its external links point at the
// Ingress's host with the certificate of its TLS Secret, as KubeVirt's.
// A renewed Secret is read again once IngressCertRefresh has passed, or at
// once when the Ingress changes.
func TestIngressDiscovery(t *testing.T) {
	const install = "kubevirt"
	clk := clocktesting.NewFakeClock(time.Now())
	e := start(t, exportctl.WithIngressDiscovery(install), exportctl.WithClock(clk))
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
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: install, Name: "export-tls"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: leaf.CertPEM(), corev1.TLSPrivateKeyKey: leaf.KeyPEM()}}
	must(t, e.c.Create(e.ctx, sec))
	pathType := networkingv1.PathTypePrefix
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: install, Name: "export"},
		Spec: networkingv1.IngressSpec{TLS: []networkingv1.IngressTLS{{Hosts: []string{"vm-export.example.test"}, SecretName: "export-tls"}},
			Rules: []networkingv1.IngressRule{{Host: "vm-export.example.test", IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
				Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &pathType, Backend: networkingv1.IngressBackend{
					Service: &networkingv1.IngressServiceBackend{Name: export.ProxyServiceName, Port: networkingv1.ServiceBackendPort{Number: 443}}}}}}}}}}}
	must(t, e.c.Create(e.ctx, ing))
	e.wait(t, vme, "external links through the Ingress", func(st *exportv1.VirtualMachineExportStatus) bool {
		return st.Links != nil && st.Links.External != nil && len(st.Links.External.Volumes) == 1 &&
			strings.HasPrefix(st.Links.External.Volumes[0].Formats[0].Url, "https://vm-export.example.test/api/export.kubevirt.io/v1beta1/namespaces/default/virtualmachineexports/disk-export/")
	})
	if got, want := strings.TrimSpace(vme.Status.Links.External.Cert), strings.TrimSpace(string(leaf.CertPEM())); got != want {
		t.Errorf("external links' certificate:\n%s\nwant the Ingress's:\n%s", got, want)
	}

	// The Secret renewed: the certificate read stays until it is due.
	renew := func(name string) []byte {
		t.Helper()
		l, err := ingressCA.Issue(certs.Request{CommonName: name, DNSNames: []string{"vm-export.example.test"}, Server: true, Validity: 24 * time.Hour}, time.Now())
		must(t, err)
		must(t, e.c.Get(e.ctx, client.ObjectKeyFromObject(sec), sec))
		sec.Data = map[string][]byte{corev1.TLSCertKey: l.CertPEM(), corev1.TLSPrivateKeyKey: l.KeyPEM()}
		must(t, e.c.Update(e.ctx, sec))
		return l.CertPEM()
	}
	poke := func(n string) {
		t.Helper()
		must(t, e.c.Get(e.ctx, client.ObjectKeyFromObject(vme), vme))
		metav1.SetMetaDataAnnotation(&vme.ObjectMeta, "test/poke", n)
		must(t, e.c.Update(e.ctx, vme))
	}
	certIs := func(pem []byte) func(*exportv1.VirtualMachineExportStatus) bool {
		return func(st *exportv1.VirtualMachineExportStatus) bool {
			return st.Links != nil && st.Links.External != nil && strings.TrimSpace(st.Links.External.Cert) == strings.TrimSpace(string(pem))
		}
	}
	second := renew("second")
	poke("1")
	testenv.Consistently(testenv.Within(t, 2*time.Second), t, 100*time.Millisecond, "the first certificate kept before the refresh is due", func() (bool, string) {
		must(t, e.c.Get(e.ctx, client.ObjectKeyFromObject(vme), vme))
		return certIs(leaf.CertPEM())(vme.Status), "the certificate changed"
	})
	clk.Step(exportctl.IngressCertRefresh + time.Second)
	poke("2")
	e.wait(t, vme, "the renewed certificate once the refresh is due", certIs(second))

	// The Ingress changes: its Secret is read again at once.
	third := renew("third")
	must(t, e.c.Get(e.ctx, client.ObjectKeyFromObject(ing), ing))
	metav1.SetMetaDataAnnotation(&ing.ObjectMeta, "test/changed", "yes")
	must(t, e.c.Update(e.ctx, ing))
	e.wait(t, vme, "the certificate read again when the Ingress changed", certIs(third))
}
