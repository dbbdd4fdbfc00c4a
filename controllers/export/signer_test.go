package export_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	exportctl "github.com/virtkit/virtkit/controllers/export"
	"github.com/virtkit/virtkit/deploy/certs"
	"github.com/virtkit/virtkit/deploy/certs/certfiles"
)

// A PairSigner over a CA read from files (a mounted Secret) signs with
// the renewed CA once the files change, and refuses a pair that is no CA.
func TestPairSignerFollowsRenewedCA(t *testing.T) {
	now := time.Now()
	dir := t.TempDir()
	crt, key := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	write := func(p *certs.Pair) {
		t.Helper()
		must(t, os.WriteFile(crt, p.CertPEM(), 0o600))
		must(t, os.WriteFile(key, p.KeyPEM(), 0o600))
	}
	ca1, err := certs.NewCA("export-ca-1", now, 48*time.Hour)
	must(t, err)
	write(ca1)
	clock := now
	src, err := certfiles.New(crt, key, "", certfiles.WithClock(func() time.Time { return clock }), certfiles.WithInterval(time.Minute))
	must(t, err)
	signer := exportctl.PairSigner{Pair: src.Pair}
	issuedBy := func(ca *certs.Pair) {
		t.Helper()
		certPEM, _, caPEM, err := signer.Issue(context.Background(), []string{"virt-export-e.ns.svc"}, now, 2*time.Hour)
		must(t, err)
		block, _ := pem.Decode(certPEM)
		leaf, err := x509.ParseCertificate(block.Bytes)
		must(t, err)
		roots := x509.NewCertPool()
		roots.AddCert(ca.Cert)
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "virt-export-e.ns.svc", CurrentTime: now}); err != nil {
			t.Errorf("issued certificate against %s: %v", ca.Cert.Subject.CommonName, err)
		}
		if string(caPEM) != string(ca.CertPEM()) {
			t.Errorf("the bundle is not %s's certificate", ca.Cert.Subject.CommonName)
		}
	}
	issuedBy(ca1)

	ca2, err := certs.NewCA("export-ca-2", now, 48*time.Hour)
	must(t, err)
	write(ca2)
	clock = now.Add(2 * time.Minute)
	issuedBy(ca2)

	leaf, err := ca2.Issue(certs.Request{CommonName: "not-a-ca", DNSNames: []string{"not-a-ca"}, Server: true, Validity: 2 * time.Hour}, now)
	must(t, err)
	write(leaf)
	clock = now.Add(4 * time.Minute)
	if _, _, _, err := signer.Issue(context.Background(), []string{"x"}, now, 2*time.Hour); err == nil || !strings.Contains(err.Error(), "not a CA") {
		t.Errorf("a leaf as the CA: %v, want refused as not a CA", err)
	}
}
