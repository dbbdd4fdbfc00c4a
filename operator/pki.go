package operator

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/deploy/certs"
	"github.com/virtkit/virtkit/virt/clusterconfig"
)

// pki is the installation's certificates as they should be stored: the
// objects to apply, the CA bundle, and when the first of them is due.
type pki struct {
	objects []client.Object
	bundle  []byte
	next    time.Time
}

// ensurePKI reads the stored certificates of an installation by an
// operator with settings s (in its namespace) and returns them,
// issuing again whatever is missing, signed by another CA, no longer what
// its Leaf asks for, or due under rot. A new CA re-issues every
// certificate; the bundle keeps the earlier CA until it expires, so that a
// peer still holding a certificate the old CA signed is trusted until it
// has its new one.
func ensurePKI(ctx context.Context, r client.Reader, s Settings, rot clusterconfig.Rotation, now time.Time) (pki, error) {
	var out pki
	namespace := s.Namespace
	ca, err := ensureCA(ctx, r, namespace, SecretCA, CACommonName, rot, now)
	if err != nil {
		return out, err
	}
	var previous []byte
	cm := &corev1.ConfigMap{}
	switch err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ConfigMapCA}, cm); {
	case err == nil:
		previous = []byte(cm.Data[CABundleKey])
	case !apierrors.IsNotFound(err):
		return out, fmt.Errorf("configmap %s/%s: %w", namespace, ConfigMapCA, err)
	}
	out.bundle = Bundle(ca, previous, now)
	out.next = ca.Cert.NotAfter.Add(-rot.CARenewBefore)
	out.objects = append(out.objects,
		tlsSecret(namespace, SecretCA, ca, nil),
		&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: ConfigMapCA},
			Data:       map[string]string{CABundleKey: string(out.bundle)}})

	// The export CA signs export servers' certificates (virt-controller
	// issues them); it is trusted by export clients alone, not in the
	// bundle.
	exportCA, err := ensureCA(ctx, r, namespace, SecretExportCA, ExportCACommonName, rot, now)
	if err != nil {
		return out, err
	}
	out.objects = append(out.objects, tlsSecret(namespace, SecretExportCA, exportCA, nil))
	if at := exportCA.Cert.NotAfter.Add(-rot.CARenewBefore); at.Before(out.next) {
		out.next = at
	}

	for _, l := range Leaves(s, rot.CertDuration) {
		s, err := readSecret(ctx, r, namespace, l.Secret)
		if err != nil {
			return out, err
		}
		var leaf *certs.Pair
		if s != nil {
			leaf, _ = certs.Parse(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey])
		}
		if leaf == nil || !certs.Fits(leaf.Cert, ca.Cert, l.Request) || certs.Due(leaf.Cert, now, rot.CertRenewBefore) {
			if leaf, err = ca.Issue(l.Request, now); err != nil {
				return out, fmt.Errorf("secret %s/%s: %w", namespace, l.Secret, err)
			}
		}
		var bundle []byte
		if l.WithCA {
			bundle = out.bundle
		}
		out.objects = append(out.objects, tlsSecret(namespace, l.Secret, leaf, bundle))
		if at := leaf.Cert.NotAfter.Add(-rot.CertRenewBefore); at.Before(out.next) {
			out.next = at
		}
	}
	return out, nil
}

// ensureCA returns the CA stored in the Secret name, or a new one named
// commonName when there is none, it is not a CA, or it is due under rot.
func ensureCA(ctx context.Context, r client.Reader, namespace, name, commonName string, rot clusterconfig.Rotation, now time.Time) (*certs.Pair, error) {
	secret, err := readSecret(ctx, r, namespace, name)
	if err != nil {
		return nil, err
	}
	var ca *certs.Pair
	if secret != nil {
		ca, _ = certs.Parse(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
	}
	if ca == nil || !ca.Cert.IsCA || certs.Due(ca.Cert, now, rot.CARenewBefore) {
		if ca, err = certs.NewCA(commonName, now, rot.CADuration); err != nil {
			return nil, fmt.Errorf("secret %s/%s: %w", namespace, name, err)
		}
	}
	return ca, nil
}

func readSecret(ctx context.Context, r client.Reader, namespace, name string) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	switch err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, s); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("secret %s/%s: %w", namespace, name, err)
	}
	return s, nil
}

// tlsSecret is a kubernetes.io/tls Secret of p, with the CA bundle as
// ca.crt when there is one.
func tlsSecret(namespace, name string, p *certs.Pair, bundle []byte) *corev1.Secret {
	s := &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: p.CertPEM(), corev1.TLSPrivateKeyKey: p.KeyPEM()}}
	if bundle != nil {
		s.Data[CACertKey] = bundle
	}
	return s
}
