package certrequest_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/virtkit/virtkit/deploy"
	"github.com/virtkit/virtkit/deploy/certs"
	"github.com/virtkit/virtkit/deploy/certs/certrequest"
	"github.com/virtkit/virtkit/operator/signer"
)

// cluster is a fake apiserver's CSR API, which fills in who asked as the
// apiserver does (virt-handler's service account on node from), with
// virt-operator's signer deciding each request.
func cluster(t *testing.T, from string) (*fake.Clientset, *certs.Pair, string) {
	t.Helper()
	ca, err := certs.NewCA("kubevirt.io", time.Now(), 7*24*time.Hour)
	assert.NilError(t, err)
	caFile := filepath.Join(t.TempDir(), "ca-bundle")
	assert.NilError(t, os.WriteFile(caFile, ca.CertPEM(), 0o600))
	cs := fake.NewClientset()
	n := 0
	cs.PrependReactor("create", "certificatesigningrequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
		csr := a.(k8stesting.CreateAction).GetObject().(*certv1.CertificateSigningRequest)
		n++
		csr.Name = csr.GenerateName + string(rune('a'+n))
		csr.Spec.Username = "system:serviceaccount:kubevirt:" + deploy.HandlerServiceAccount
		csr.Spec.Extra = map[string]certv1.ExtraValue{deploy.NodeNameExtra: {from}}
		return false, nil, nil
	})
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "kubevirt-ca"},
		Data: map[string][]byte{corev1.TLSCertKey: ca.CertPEM(), corev1.TLSPrivateKeyKey: ca.KeyPEM()}}
	sg, err := signer.New(signer.Config{Namespace: "kubevirt", CASecret: "kubevirt-ca"}, cs.CertificatesV1().CertificateSigningRequests(),
		ctrlfake.NewClientBuilder().WithObjects(secret).Build())
	assert.NilError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		for ctx.Err() == nil {
			list, err := cs.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
			if err == nil {
				for _, c := range list.Items {
					_, _ = sg.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKey{Name: c.Name}})
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	return cs, ca, caFile
}

// A handler gets its node's certificate from virt-operator's signer, keeps
// it in owner-only files, serves TLS with it, and uses it again after a
// restart without asking again.
func TestNodeCertificate(t *testing.T) {
	cs, ca, caFile := cluster(t, "node-b")
	dir := filepath.Join(t.TempDir(), "migration-tls")
	r, err := certrequest.New(certrequest.NodeConfig("node-b", dir, caFile), cs.CertificatesV1().CertificateSigningRequests(),
		certrequest.WithPoll(10*time.Millisecond, 10*time.Second))
	assert.NilError(t, err)

	// Before the certificate, TLS fails, at once.
	_, err = r.ClientConfig(certs.NodeName("node-a"))
	assert.ErrorContains(t, err, "no certificate from "+certs.NodeSigner+" yet")

	due, err := r.Ensure(context.Background())
	assert.NilError(t, err)
	assert.Assert(t, due.After(time.Now().Add(18*time.Hour)) && due.Before(time.Now().Add(20*time.Hour)), "due %s: a fifth of a day before its end", due)
	fi, err := os.Stat(dir)
	assert.NilError(t, err)
	assert.Equal(t, fi.Mode().Perm(), os.FileMode(0o700))
	for _, f := range []string{certrequest.KeyFile, certrequest.CertFile} {
		fi, err := os.Stat(filepath.Join(dir, f))
		assert.NilError(t, err)
		assert.Equal(t, fi.Mode().Perm(), os.FileMode(0o600), f)
	}

	// A peer of the same CA completes mutual TLS with it, seeing node-b.
	peer, err := ca.Issue(certs.NodeRequest("node-a", 2*time.Hour), time.Now())
	assert.NilError(t, err)
	pair, err := tls.X509KeyPair(peer.CertPEM(), peer.KeyPEM())
	assert.NilError(t, err)
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	srv := tls.Server(a, r.ServerConfig())
	errs := make(chan error, 1)
	go func() { errs <- srv.Handshake() }()
	cli := tls.Client(b, &tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: poolOf(ca), ServerName: certs.NodeName("node-b")})
	assert.NilError(t, cli.Handshake())
	assert.NilError(t, <-errs)
	got, err := certs.NodeOf(cli.ConnectionState().PeerCertificates[0])
	assert.NilError(t, err)
	assert.Equal(t, got, "node-b")

	// Restarted: the certificate on file is used again.
	before, err := cs.CertificatesV1().CertificateSigningRequests().List(context.Background(), metav1.ListOptions{})
	assert.NilError(t, err)
	again, err := certrequest.New(certrequest.NodeConfig("node-b", dir, caFile), cs.CertificatesV1().CertificateSigningRequests())
	assert.NilError(t, err)
	_, err = again.Ensure(context.Background())
	assert.NilError(t, err)
	after, err := cs.CertificatesV1().CertificateSigningRequests().List(context.Background(), metav1.ListOptions{})
	assert.NilError(t, err)
	assert.Equal(t, len(after.Items), len(before.Items), "no new request after a restart")
}

// A handler that asks for another node's certificate (its pod runs on
// node-c) is denied, with the signer's reason, and keeps nothing.
func TestNodeCertificateDenied(t *testing.T) {
	cs, _, caFile := cluster(t, "node-c")
	dir := filepath.Join(t.TempDir(), "migration-tls")
	r, err := certrequest.New(certrequest.NodeConfig("node-b", dir, caFile), cs.CertificatesV1().CertificateSigningRequests(),
		certrequest.WithPoll(10*time.Millisecond, 10*time.Second))
	assert.NilError(t, err)
	_, err = r.Ensure(context.Background())
	assert.ErrorContains(t, err, `Denied: AutoDenied: spec.request: asks for node "node-b"'s certificate, from a pod on node "node-c"`)
	_, err = os.Stat(filepath.Join(dir, certrequest.CertFile))
	assert.Assert(t, os.IsNotExist(err), "a certificate kept: %v", err)
}

func poolOf(ca *certs.Pair) *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}
