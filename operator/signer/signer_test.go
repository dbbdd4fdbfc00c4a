package signer_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/virtkit/virtkit/deploy"
	"github.com/virtkit/virtkit/deploy/certs"
	"github.com/virtkit/virtkit/operator/signer"
)

var now = time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)

const handlerUser = "system:serviceaccount:kubevirt:" + deploy.HandlerServiceAccount

// request is virt-handler's request from a pod on node from, for node's
// certificate.
func request(t *testing.T, name, node, from string) *certv1.CertificateSigningRequest {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	assert.NilError(t, err)
	b, err := certs.NodeCSR(node, key)
	assert.NilError(t, err)
	day := int32(24 * 3600)
	return &certv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: certv1.CertificateSigningRequestSpec{
		Request: b, SignerName: certs.NodeSigner, ExpirationSeconds: &day, Username: handlerUser,
		Extra:  map[string]certv1.ExtraValue{deploy.NodeNameExtra: {from}},
		Usages: []certv1.KeyUsage{certv1.UsageDigitalSignature, certv1.UsageServerAuth, certv1.UsageClientAuth},
	}}
}

// Who may have which node's certificate.
func TestReview(t *testing.T) {
	for name, tc := range map[string]struct {
		edit func(*certv1.CertificateSigningRequest)
		want string
	}{
		"its own node": {},
		"another node's": {edit: func(c *certv1.CertificateSigningRequest) { c.Spec.Extra[deploy.NodeNameExtra] = []string{"c"} },
			want: `spec.request: asks for node "b"'s certificate, from a pod on node "c"`},
		"no node": {edit: func(c *certv1.CertificateSigningRequest) { delete(c.Spec.Extra, deploy.NodeNameExtra) },
			want: "the request must come with the token of a pod on one node"},
		"another user": {edit: func(c *certv1.CertificateSigningRequest) { c.Spec.Username = "system:node:b" },
			want: `spec.username "system:node:b": only ` + handlerUser},
		"another signer": {edit: func(c *certv1.CertificateSigningRequest) { c.Spec.SignerName = "kubernetes.io/kubelet-serving" },
			want: `spec.signerName "kubernetes.io/kubelet-serving"`},
		"a usage more": {edit: func(c *certv1.CertificateSigningRequest) {
			c.Spec.Usages = append(c.Spec.Usages, certv1.UsageCodeSigning)
		},
			want: `spec.usages: "code signing" is not a usage`},
		"not a client": {edit: func(c *certv1.CertificateSigningRequest) { c.Spec.Usages = []certv1.KeyUsage{certv1.UsageServerAuth} },
			want: "a migration certificate serves and is a client"},
		"too short": {edit: func(c *certv1.CertificateSigningRequest) { c.Spec.ExpirationSeconds = new(int32(600)) },
			want: "spec.expirationSeconds 600: must be more than an hour"},
		"garbage": {edit: func(c *certv1.CertificateSigningRequest) { c.Spec.Request = []byte("x") }, want: "spec.request: certs: not one PEM"},
	} {
		t.Run(name, func(t *testing.T) {
			csr := request(t, "r", "b", "b")
			if tc.edit != nil {
				tc.edit(csr)
			}
			g, err := signer.Review(csr, handlerUser, 12*time.Hour)
			if tc.want != "" {
				assert.ErrorContains(t, err, tc.want)
				return
			}
			assert.NilError(t, err)
			assert.Equal(t, g.Node, "b")
			assert.Equal(t, g.Validity, 12*time.Hour, "the request's day, cut to the signer's most")
		})
	}
}

// The signer approves and signs the handler's request for its own node
// with the installation's CA, denies one for another node, and leaves
// other signers' requests alone.
func TestReconcile(t *testing.T) {
	ctx := context.Background()
	ca, err := certs.NewCA("kubevirt.io", now, 7*24*time.Hour)
	assert.NilError(t, err)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "kubevirt-ca"},
		Data: map[string][]byte{corev1.TLSCertKey: ca.CertPEM(), corev1.TLSPrivateKeyKey: ca.KeyPEM()}}
	own, stolen, other := request(t, "own", "b", "b"), request(t, "stolen", "b", "c"), request(t, "other", "b", "b")
	other.Spec.SignerName = "example.com/other"
	cs := fake.NewClientset(own, stolen, other)
	r, err := signer.New(signer.Config{Namespace: "kubevirt", CASecret: "kubevirt-ca"}, cs.CertificatesV1().CertificateSigningRequests(),
		ctrlfake.NewClientBuilder().WithObjects(secret).Build(), signer.WithClock(clocktesting.NewFakePassiveClock(now)))
	assert.NilError(t, err)
	for _, name := range []string{"own", "stolen", "other"} {
		_, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKey{Name: name}})
		assert.NilError(t, err, name)
	}
	get := func(name string) *certv1.CertificateSigningRequest {
		c, err := cs.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
		assert.NilError(t, err)
		return c
	}

	got := get("own")
	assert.Equal(t, len(got.Status.Conditions), 1)
	assert.Equal(t, got.Status.Conditions[0].Type, certv1.CertificateApproved)
	assert.Equal(t, got.Status.Conditions[0].Reason, signer.ReasonApproved)
	block, _ := pem.Decode(got.Status.Certificate)
	assert.Assert(t, block != nil, "no certificate issued")
	cert, err := x509.ParseCertificate(block.Bytes)
	assert.NilError(t, err)
	assert.NilError(t, cert.CheckSignatureFrom(ca.Cert))
	node, err := certs.NodeOf(cert)
	assert.NilError(t, err)
	assert.Equal(t, node, "b")
	assert.Equal(t, cert.NotAfter, now.Add(24*time.Hour).Truncate(time.Second))

	got = get("stolen")
	assert.Equal(t, len(got.Status.Conditions), 1)
	assert.Equal(t, got.Status.Conditions[0].Type, certv1.CertificateDenied)
	assert.Assert(t, len(got.Status.Certificate) == 0)
	assert.Equal(t, got.Status.Conditions[0].Message, `spec.request: asks for node "b"'s certificate, from a pod on node "c"`)

	got = get("other")
	assert.Equal(t, len(got.Status.Conditions), 0)

	// A second look changes nothing.
	_, err = r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKey{Name: "own"}})
	assert.NilError(t, err)
	assert.Equal(t, len(get("own").Status.Conditions), 1)
}
