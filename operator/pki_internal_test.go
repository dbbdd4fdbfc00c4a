package operator

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/virtkit/virtkit/deploy/certs"
	"github.com/virtkit/virtkit/internal/scheme"
	"github.com/virtkit/virtkit/virt/clusterconfig"
)

// store keeps what ensurePKI returned, as applying it would.
func store(t *testing.T, cl client.Client, p pki) {
	t.Helper()
	for _, o := range p.objects {
		o = o.DeepCopyObject().(client.Object)
		if err := cl.Create(context.Background(), o); err != nil {
			existing := o.DeepCopyObject().(client.Object)
			if err := cl.Get(context.Background(), client.ObjectKeyFromObject(o), existing); err != nil {
				t.Fatal(err)
			}
			o.SetResourceVersion(existing.GetResourceVersion())
			if err := cl.Update(context.Background(), o); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func secretPair(t *testing.T, p pki, name string) *certs.Pair {
	t.Helper()
	for _, o := range p.objects {
		if s, ok := o.(*corev1.Secret); ok && s.Name == name {
			pair, err := certs.Parse(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey])
			if err != nil {
				t.Fatal(err)
			}
			return pair
		}
	}
	t.Fatalf("no Secret %s", name)
	return nil
}

// Certificates are kept while fresh, renewed when due, and all re-issued
// under a new CA, with the old CA kept in the bundle until it expires.
func TestEnsurePKIRotation(t *testing.T) {
	ctx := context.Background()
	cl := fake.NewClientBuilder().WithScheme(scheme.New()).Build()
	rot := clusterconfig.Rotation{CADuration: 100 * time.Hour, CARenewBefore: 20 * time.Hour, CertDuration: 10 * time.Hour, CertRenewBefore: 2 * time.Hour}
	t0 := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)

	first, err := ensurePKI(ctx, cl, Settings{Namespace: "kubevirt"}, rot, t0)
	if err != nil {
		t.Fatal(err)
	}
	store(t, cl, first)
	ca1, api1 := secretPair(t, first, SecretCA), secretPair(t, first, SecretVirtAPI)
	export1 := secretPair(t, first, SecretExportCA)
	if !export1.Cert.IsCA || export1.Cert.Subject.CommonName != ExportCACommonName || export1.Cert.Equal(ca1.Cert) {
		t.Errorf("the export CA: CA %v, named %q; want a CA of its own named %q", export1.Cert.IsCA, export1.Cert.Subject.CommonName, ExportCACommonName)
	}
	if want := api1.Cert.NotAfter.Add(-rot.CertRenewBefore); !first.next.Equal(want) {
		t.Errorf("next renewal %s, want the first leaf's %s", first.next, want)
	}

	// An hour later nothing is due: the same certificates.
	same, err := ensurePKI(ctx, cl, Settings{Namespace: "kubevirt"}, rot, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if !secretPair(t, same, SecretVirtAPI).Cert.Equal(api1.Cert) || !secretPair(t, same, SecretCA).Cert.Equal(ca1.Cert) ||
		!secretPair(t, same, SecretExportCA).Cert.Equal(export1.Cert) {
		t.Error("fresh certificates were issued again")
	}

	// Past the leaves' renewal time: new leaves, same CA.
	renewed, err := ensurePKI(ctx, cl, Settings{Namespace: "kubevirt"}, rot, t0.Add(9*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	store(t, cl, renewed)
	if secretPair(t, renewed, SecretVirtAPI).Cert.Equal(api1.Cert) || !secretPair(t, renewed, SecretCA).Cert.Equal(ca1.Cert) {
		t.Error("a due leaf was not renewed, or the CA changed")
	}

	// Past the CA's renewal time: a new CA, every leaf re-issued by it, and
	// a bundle of both CAs.
	rotated, err := ensurePKI(ctx, cl, Settings{Namespace: "kubevirt"}, rot, t0.Add(81*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	ca2 := secretPair(t, rotated, SecretCA)
	if ca2.Cert.Equal(ca1.Cert) || secretPair(t, rotated, SecretExportCA).Cert.Equal(export1.Cert) {
		t.Fatal("a due CA was not renewed")
	}
	bundled, err := certs.ParseCerts(rotated.bundle)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range bundled {
		if c.Subject.CommonName == ExportCACommonName {
			t.Error("the export CA is in the cluster's CA bundle")
		}
	}
	for _, l := range Leaves(Settings{Namespace: "kubevirt"}, rot.CertDuration) {
		if err := secretPair(t, rotated, l.Secret).Cert.CheckSignatureFrom(ca2.Cert); err != nil {
			t.Errorf("%s is not signed by the new CA: %v", l.Secret, err)
		}
	}
	bundle, err := certs.ParseCerts(rotated.bundle)
	if err != nil || len(bundle) != 2 || !bundle[0].Equal(ca2.Cert) || !bundle[1].Equal(ca1.Cert) {
		t.Errorf("bundle after rotation: %d certificates, %v; want the new CA then the old", len(bundle), err)
	}
	for _, o := range rotated.objects {
		if s, ok := o.(*corev1.Secret); ok && s.Name == SecretHandlerServer && string(s.Data[CACertKey]) != string(rotated.bundle) {
			t.Errorf("%s's ca.crt is not the bundle", s.Name)
		}
	}
}
