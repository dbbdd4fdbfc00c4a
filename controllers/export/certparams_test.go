package export_test

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	exportv1 "kubevirt.io/api/export/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/controllers/conditions"
	exportctl "github.com/virtkit/virtkit/controllers/export"
	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/virt/storage/export"
)

// TestKubeVirtCertParams: with the KubeVirt CR's certificate parameters,
// a server's certificate lasts what spec.certificateRotateStrategy says
// for servers and the server stops renewBefore ahead of its end; the pod
// and the certificate's Secret record the parameters as KubeVirt's
// annotation. A change of the CR replaces the running server (event
// CertificateParametersChanged) with one whose certificate follows it,
// once the old one is gone (Pending meanwhile, saying so).
func TestKubeVirtCertParams(t *testing.T) {
	const install = "kubevirt"
	e := start(t, exportctl.WithKubeVirtCertParams(install))
	must(t, e.c.Create(e.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: install}}))
	kv := &virtv1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Namespace: install, Name: "kubevirt"},
		Spec: virtv1.KubeVirtSpec{CertificateRotationStrategy: virtv1.KubeVirtCertificateRotateStrategy{SelfSigned: &virtv1.KubeVirtSelfSignConfiguration{
			Server: &virtv1.CertConfig{Duration: &metav1.Duration{Duration: 2 * time.Hour}, RenewBefore: &metav1.Duration{Duration: 30 * time.Minute}}}}}}
	must(t, e.c.Create(e.ctx, kv))
	e.claim(t, "disk", map[string]string{"cdi.kubevirt.io/storage.contentType": "kubevirt"})
	// A TTL past every certificate's renewal, which is then the deadline.
	vme := &exportv1.VirtualMachineExport{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "disk-export"},
		Spec: exportv1.VirtualMachineExportSpec{Source: corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "disk"},
			TTLDuration: &metav1.Duration{Duration: 24 * time.Hour}}}
	must(t, e.c.Create(e.ctx, vme))

	first := e.pod(t, vme)
	e.checkCertParams(t, vme, first, 2*time.Hour, 30*time.Minute)
	e.playKubelet(t, first)
	e.wait(t, vme, "Ready", func(st *exportv1.VirtualMachineExportStatus) bool { return st.Phase == exportv1.Ready })

	// The old pod terminates for a while, as on a kubelet (a finalizer
	// holds it here): the export waits for it to go, saying so, rather
	// than make a successor its name still holds.
	must(t, e.c.Get(e.ctx, client.ObjectKeyFromObject(first), first))
	first.Finalizers = append(first.Finalizers, "test.virtkit.io/terminating")
	must(t, e.c.Update(e.ctx, first))
	must(t, e.c.Get(e.ctx, client.ObjectKeyFromObject(kv), kv))
	kv.Spec.CertificateRotationStrategy.SelfSigned.Server = &virtv1.CertConfig{Duration: &metav1.Duration{Duration: 3 * time.Hour}}
	must(t, e.c.Update(e.ctx, kv))
	e.wait(t, vme, "Pending while its server pod is replaced", func(st *exportv1.VirtualMachineExportStatus) bool {
		c := conditions.Export().Find(st.Conditions, exportv1.ConditionReady)
		return st.Phase == exportv1.Pending && c != nil && c.Message == "the export server pod "+first.Name+" is being replaced"
	})
	must(t, e.c.Get(e.ctx, client.ObjectKeyFromObject(first), first))
	if first.DeletionTimestamp == nil {
		t.Fatal("the old server pod is not being deleted")
	}
	first.Finalizers = nil
	must(t, e.c.Update(e.ctx, first))
	var second corev1.Pod
	testenv.Eventually(e.ctx, t, "a new server pod", func() (bool, string) {
		err := e.c.Get(e.ctx, client.ObjectKey{Namespace: ns, Name: export.PodName(vme.Name)}, &second)
		return err == nil && second.UID != first.UID && second.DeletionTimestamp == nil, fmt.Sprint(err)
	})
	// No renewBefore: a fifth of the certificate's life, KubeVirt's default.
	e.checkCertParams(t, vme, &second, 3*time.Hour, 36*time.Minute)
	var events corev1.EventList
	testenv.Eventually(e.ctx, t, "the CertificateParametersChanged event", func() (bool, string) {
		must(t, e.c.List(e.ctx, &events, client.InNamespace(ns), client.MatchingFields{"involvedObject.name": vme.Name}))
		for _, ev := range events.Items {
			if ev.Reason == exportctl.EventCertParamsChanged {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d events", len(events.Items))
	})
}

// checkCertParams checks that pod and its certificate were made with a
// certificate life of d, renewed r ahead of its end.
func (e *env) checkCertParams(t *testing.T, vme *exportv1.VirtualMachineExport, pod *corev1.Pod, d, r time.Duration) {
	t.Helper()
	want := fmt.Sprintf(`{"Duration":%d,"RenewBefore":%d}`, d, r)
	if got := pod.Annotations[exportctl.AnnCertParams]; got != want {
		t.Errorf("the pod's %s: %s, want %s", exportctl.AnnCertParams, got, want)
	}
	var sec corev1.Secret
	if err := e.c.Get(e.ctx, client.ObjectKey{Namespace: ns, Name: export.CertSecretName(vme.Name)}, &sec); err != nil {
		if apierrors.IsNotFound(err) {
			t.Fatal("no certificate Secret")
		}
		t.Fatal(err)
	}
	if got := sec.Annotations[exportctl.AnnCertParams]; got != want {
		t.Errorf("the certificate Secret's %s: %s, want %s", exportctl.AnnCertParams, got, want)
	}
	block, _ := pem.Decode(sec.Data[corev1.TLSCertKey])
	if block == nil {
		t.Fatal("the Secret holds no PEM certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	must(t, err)
	if left := time.Until(cert.NotAfter); left > d || left < d-time.Minute {
		t.Errorf("the certificate ends in %s, want about %s", left, d)
	}
	var deadline string
	for _, ev := range pod.Spec.Containers[0].Env {
		if ev.Name == "DEADLINE" {
			deadline = ev.Value
		}
	}
	at, err := time.Parse(time.RFC3339, deadline)
	if err != nil || !at.Equal(cert.NotAfter.Add(-r).Truncate(time.Second)) {
		t.Errorf("the server's DEADLINE %q (%v), want %s: the certificate's end less %s", deadline, err, cert.NotAfter.Add(-r).Format(time.RFC3339), r)
	}
}
