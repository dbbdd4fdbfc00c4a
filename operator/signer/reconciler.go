package signer

import (
	"context"
	"encoding/pem"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/virtkit/virtkit/deploy"
	"github.com/virtkit/virtkit/deploy/certs"
)

// CSRs are the effects on CertificateSigningRequests the signer needs;
// client-go's CertificatesV1().CertificateSigningRequests() has them.
type CSRs interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*certv1.CertificateSigningRequest, error)
	UpdateApproval(ctx context.Context, name string, csr *certv1.CertificateSigningRequest, opts metav1.UpdateOptions) (*certv1.CertificateSigningRequest, error)
	UpdateStatus(ctx context.Context, csr *certv1.CertificateSigningRequest, opts metav1.UpdateOptions) (*certv1.CertificateSigningRequest, error)
}

// Condition reasons the signer writes.
const (
	ReasonApproved = "AutoApproved"
	ReasonDenied   = "AutoDenied"
)

// DefaultMaxValidity is the longest a migration certificate lasts unless
// Config.MaxValidity says otherwise: a day, as virtkit's other
// certificates by default.
const DefaultMaxValidity = 24 * time.Hour

// Config says where the installation is.
type Config struct {
	// Namespace holds virt-handler's ServiceAccount and the CA's Secret
	// (required).
	Namespace string
	// CASecret names the kubernetes.io/tls Secret of the CA (required).
	CASecret string
	// MaxValidity bounds a certificate's life (default DefaultMaxValidity).
	MaxValidity time.Duration
}

// Reconciler approves or denies, and signs, the requests for
// certs.NodeSigner. Build it with New.
type Reconciler struct {
	cfg    Config
	user   string
	csrs   CSRs
	reader client.Reader
	clock  clock.PassiveClock
	log    logr.Logger
}

// Option configures a Reconciler.
type Option func(*Reconciler)

// WithClock sets the clock of the certificates' validity.
func WithClock(c clock.PassiveClock) Option { return func(r *Reconciler) { r.clock = c } }

// WithLogger sets the logger.
func WithLogger(l logr.Logger) Option { return func(r *Reconciler) { r.log = l } }

// New returns the signer of cfg's installation; csrs updates the requests
// and reader reads them and the CA's Secret.
func New(cfg Config, csrs CSRs, reader client.Reader, opts ...Option) (*Reconciler, error) {
	if cfg.Namespace == "" || cfg.CASecret == "" {
		return nil, fmt.Errorf("signer: Config.Namespace %q and Config.CASecret %q: both are required", cfg.Namespace, cfg.CASecret)
	}
	if cfg.MaxValidity == 0 {
		cfg.MaxValidity = DefaultMaxValidity
	}
	r := &Reconciler{cfg: cfg, csrs: csrs, reader: reader, clock: clock.RealClock{}, log: logr.Discard(),
		user: fmt.Sprintf("system:serviceaccount:%s:%s", cfg.Namespace, deploy.HandlerServiceAccount)}
	for _, o := range opts {
		o(r)
	}
	return r, nil
}

// CacheByObject is what a manager's cache must hold for the signer: the
// requests for certs.NodeSigner, whatever their labels.
func CacheByObject() (client.Object, cache.ByObject) {
	return &certv1.CertificateSigningRequest{}, cache.ByObject{Label: labels.Everything(),
		Field: fields.OneTermEqualSelector("spec.signerName", certs.NodeSigner)}
}

// SetupWithManager registers the signer with mgr, whose cache must hold
// CacheByObject.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	ours := predicate.NewPredicateFuncs(func(o client.Object) bool {
		csr, ok := o.(*certv1.CertificateSigningRequest)
		return ok && csr.Spec.SignerName == certs.NodeSigner
	})
	return ctrl.NewControllerManagedBy(mgr).Named("migration-certificate-signer").
		For(&certv1.CertificateSigningRequest{}, builder.WithPredicates(ours)).Complete(r)
}

// Reconcile decides one request and, approved, signs it.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	csr, err := r.csrs.Get(ctx, req.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("signer: certificatesigningrequest %s: %w", req.Name, err)
	}
	if csr.Spec.SignerName != certs.NodeSigner || len(csr.Status.Certificate) > 0 || has(csr, certv1.CertificateDenied) || has(csr, certv1.CertificateFailed) {
		return ctrl.Result{}, nil
	}
	log := r.log.WithValues("csr", csr.Name, "user", csr.Spec.Username)
	grant, err := Review(csr, r.user, r.cfg.MaxValidity)
	if err != nil {
		log.Info("denied", "reason", err.Error())
		return ctrl.Result{}, r.decide(ctx, csr, certv1.CertificateDenied, ReasonDenied, err.Error())
	}
	if !has(csr, certv1.CertificateApproved) {
		if err := r.decide(ctx, csr, certv1.CertificateApproved, ReasonApproved, "the virt-handler of node "+grant.Node+" asks for its migration certificate"); err != nil {
			return ctrl.Result{}, err
		}
		if csr, err = r.csrs.Get(ctx, req.Name, metav1.GetOptions{}); err != nil {
			return ctrl.Result{}, fmt.Errorf("signer: certificatesigningrequest %s: %w", req.Name, err)
		}
	}
	ca, err := r.ca(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	cert, err := ca.Sign(grant.Key, certs.NodeRequest(grant.Node, grant.Validity), r.clock.Now())
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("signer: certificatesigningrequest %s: %w", csr.Name, err)
	}
	csr.Status.Certificate = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
	if _, err := r.csrs.UpdateStatus(ctx, csr, metav1.UpdateOptions{}); err != nil {
		return ctrl.Result{}, fmt.Errorf("signer: certificatesigningrequest %s: status: %w", csr.Name, err)
	}
	log.Info("signed", "node", grant.Node, "notAfter", cert.NotAfter)
	return ctrl.Result{}, nil
}

// decide adds condition t (Approved or Denied) to csr.
func (r *Reconciler) decide(ctx context.Context, csr *certv1.CertificateSigningRequest, t certv1.RequestConditionType, reason, msg string) error {
	csr = csr.DeepCopy()
	csr.Status.Conditions = append(csr.Status.Conditions, certv1.CertificateSigningRequestCondition{
		Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: msg,
		LastUpdateTime: metav1.NewTime(r.clock.Now()), LastTransitionTime: metav1.NewTime(r.clock.Now()),
	})
	if _, err := r.csrs.UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("signer: certificatesigningrequest %s: %s: %w", csr.Name, t, err)
	}
	return nil
}

// ca reads the installation's CA.
func (r *Reconciler) ca(ctx context.Context) (*certs.Pair, error) {
	s := &corev1.Secret{}
	if err := r.reader.Get(ctx, client.ObjectKey{Namespace: r.cfg.Namespace, Name: r.cfg.CASecret}, s); err != nil {
		return nil, fmt.Errorf("signer: the CA's secret %s/%s: %w", r.cfg.Namespace, r.cfg.CASecret, err)
	}
	ca, err := certs.Parse(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return nil, fmt.Errorf("signer: the CA's secret %s/%s: %w", r.cfg.Namespace, r.cfg.CASecret, err)
	}
	return ca, nil
}

// has says whether csr carries condition t, true.
func has(csr *certv1.CertificateSigningRequest, t certv1.RequestConditionType) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == t && c.Status != corev1.ConditionFalse {
			return true
		}
	}
	return false
}
