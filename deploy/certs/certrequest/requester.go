package certrequest

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-logr/logr"
	certv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/virtkit/virtkit/deploy/certs"
	"github.com/virtkit/virtkit/deploy/certs/certfiles"
)

// CSRs are the effects on CertificateSigningRequests a Requester needs;
// client-go's CertificatesV1().CertificateSigningRequests() has them.
type CSRs interface {
	Create(ctx context.Context, csr *certv1.CertificateSigningRequest, opts metav1.CreateOptions) (*certv1.CertificateSigningRequest, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*certv1.CertificateSigningRequest, error)
}

// Config is what to ask for and where to keep it.
type Config struct {
	// SignerName is the signer asked (required).
	SignerName string
	// Request makes the PEM certificate request for a new key (required).
	Request func(key crypto.Signer) ([]byte, error)
	// Fits says whether a certificate on file is what Request asks for;
	// one that fits and is not due is used again after a restart
	// (required).
	Fits func(*x509.Certificate) bool
	// Usages are the request's key usages (required).
	Usages []certv1.KeyUsage
	// Validity is the life asked for (spec.expirationSeconds; default a
	// day). The certificate is renewed when a fifth of its life is left.
	Validity time.Duration
	// NamePrefix starts the generated names of the requests (required).
	NamePrefix string
	// Dir is the private folder of the key and the certificate (tls.key,
	// tls.crt), made owner-only (required). CAFile is the CA bundle peers'
	// certificates are checked with (required).
	Dir, CAFile string
}

// Files in Config.Dir.
const (
	KeyFile  = "tls.key"
	CertFile = "tls.crt"
)

// Requester keeps Config's certificate. Build it with New; run Run.
type Requester struct {
	cfg   Config
	csrs  CSRs
	clock clock.Clock
	log   logr.Logger
	poll  time.Duration
	wait  time.Duration

	mu  sync.Mutex
	src *certfiles.Source
}

// Option configures a Requester.
type Option func(*Requester)

// WithClock sets the clock of renewals and waits.
func WithClock(c clock.Clock) Option { return func(r *Requester) { r.clock = c } }

// WithLogger sets the logger.
func WithLogger(l logr.Logger) Option { return func(r *Requester) { r.log = l } }

// WithPoll sets how often an outstanding request is looked at (default
// 1 s) and how long one is waited for before another is made (default 5
// minutes).
func WithPoll(every, giveUp time.Duration) Option {
	return func(r *Requester) { r.poll, r.wait = every, giveUp }
}

// New returns the Requester of cfg, which asks csrs.
func New(cfg Config, csrs CSRs, opts ...Option) (*Requester, error) {
	if cfg.SignerName == "" || cfg.Request == nil || cfg.Fits == nil || len(cfg.Usages) == 0 || cfg.NamePrefix == "" || cfg.Dir == "" || cfg.CAFile == "" {
		return nil, errors.New("certrequest: Config.SignerName, Request, Fits, Usages, NamePrefix, Dir and CAFile: all are required")
	}
	if cfg.Validity == 0 {
		cfg.Validity = 24 * time.Hour
	}
	r := &Requester{cfg: cfg, csrs: csrs, clock: clock.RealClock{}, log: logr.Discard(), poll: time.Second, wait: 5 * time.Minute}
	for _, o := range opts {
		o(r)
	}
	return r, nil
}

// Run keeps the certificate until ctx ends: it asks for one unless a
// fitting one is on file, and for a new one when a fifth of its life is
// left; a failed request is tried again after a pause that grows to a
// minute.
func (r *Requester) Run(ctx context.Context) error {
	pause := 5 * time.Second
	for {
		next, err := r.Ensure(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			r.log.Error(err, "no certificate; asking again", "in", pause)
			next = r.clock.Now().Add(pause)
			pause = min(2*pause, time.Minute)
		} else {
			pause = 5 * time.Second
		}
		select {
		case <-ctx.Done():
			return nil
		case <-r.clock.After(next.Sub(r.clock.Now())):
		}
	}
}

// Ensure makes sure a fitting certificate that is not due is on file,
// asking for one when not, and returns when it falls due.
func (r *Requester) Ensure(ctx context.Context) (due time.Time, err error) {
	if cert, ok := r.onFile(); ok {
		return r.serve(cert)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return time.Time{}, fmt.Errorf("certrequest: key: %w", err)
	}
	certPEM, err := r.ask(ctx, key)
	if err != nil {
		return time.Time{}, err
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return time.Time{}, fmt.Errorf("certrequest: key: %w", err)
	}
	if err := os.MkdirAll(r.cfg.Dir, 0o700); err != nil {
		return time.Time{}, fmt.Errorf("certrequest: %w", err)
	}
	if err := os.Chmod(r.cfg.Dir, 0o700); err != nil {
		return time.Time{}, fmt.Errorf("certrequest: %w", err)
	}
	// The key first: a reader that sees the new certificate finds its key.
	if err := write(filepath.Join(r.cfg.Dir, KeyFile), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})); err != nil {
		return time.Time{}, err
	}
	if err := write(filepath.Join(r.cfg.Dir, CertFile), certPEM); err != nil {
		return time.Time{}, err
	}
	cert, ok := r.onFile()
	if !ok {
		return time.Time{}, errors.New("certrequest: the issued certificate does not fit the request or its key")
	}
	r.log.Info("certificate issued", "subject", cert.Subject.CommonName, "notAfter", cert.NotAfter)
	return r.serve(cert)
}

// serve makes the TLS source of the files once, and returns when cert is due.
func (r *Requester) serve(cert *x509.Certificate) (time.Time, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.src == nil {
		src, err := certfiles.New(filepath.Join(r.cfg.Dir, CertFile), filepath.Join(r.cfg.Dir, KeyFile), r.cfg.CAFile,
			certfiles.WithLogger(r.log), certfiles.WithClock(r.clock.Now))
		if err != nil {
			return time.Time{}, err
		}
		r.src = src
	}
	return cert.NotAfter.Add(-certs.RenewBefore(cert.NotAfter.Sub(cert.NotBefore))), nil
}

// onFile returns the certificate on file when it fits, goes with the key
// on file, and is not due.
func (r *Requester) onFile() (*x509.Certificate, bool) {
	certPEM, err := os.ReadFile(filepath.Join(r.cfg.Dir, CertFile))
	if err != nil {
		return nil, false
	}
	keyPEM, err := os.ReadFile(filepath.Join(r.cfg.Dir, KeyFile))
	if err != nil {
		return nil, false
	}
	p, err := certs.Parse(certPEM, keyPEM)
	if err != nil || !r.cfg.Fits(p.Cert) {
		return nil, false
	}
	life := p.Cert.NotAfter.Sub(p.Cert.NotBefore)
	if certs.Due(p.Cert, r.clock.Now(), life/5) {
		return nil, false
	}
	return p.Cert, true
}

// ask creates a request for key and waits until it is issued, denied or
// failed, or the wait is over.
func (r *Requester) ask(ctx context.Context, key crypto.Signer) ([]byte, error) {
	req, err := r.cfg.Request(key)
	if err != nil {
		return nil, err
	}
	secs := int32(r.cfg.Validity / time.Second)
	csr, err := r.csrs.Create(ctx, &certv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: r.cfg.NamePrefix},
		Spec: certv1.CertificateSigningRequestSpec{Request: req, SignerName: r.cfg.SignerName,
			Usages: r.cfg.Usages, ExpirationSeconds: &secs},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("certrequest: creating a request for %s: %w", r.cfg.SignerName, err)
	}
	r.log.Info("certificate requested", "csr", csr.Name, "signer", r.cfg.SignerName)
	deadline := r.clock.Now().Add(r.wait)
	for {
		if len(csr.Status.Certificate) > 0 {
			return csr.Status.Certificate, nil
		}
		for _, c := range csr.Status.Conditions {
			if c.Type == certv1.CertificateDenied || c.Type == certv1.CertificateFailed {
				return nil, fmt.Errorf("certrequest: request %s %s: %s: %s", csr.Name, c.Type, c.Reason, c.Message)
			}
		}
		if !r.clock.Now().Before(deadline) {
			return nil, fmt.Errorf("certrequest: request %s: not issued within %s (is %s's signer running?)", csr.Name, r.wait, r.cfg.SignerName)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-r.clock.After(r.poll):
		}
		if csr, err = r.csrs.Get(ctx, csr.Name, metav1.GetOptions{}); err != nil {
			return nil, fmt.Errorf("certrequest: request %s: %w", csr.Name, err)
		}
	}
}

// write writes b to path atomically, owner-only; an existing file (or
// link) at path is replaced, never followed.
func write(path string, b []byte) error {
	tmp := path + ".new"
	_ = os.Remove(tmp)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("certrequest: %w", err)
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("certrequest: %w", err)
	}
	return nil
}

// source is the TLS source of the files, nil before the first certificate.
func (r *Requester) source() *certfiles.Source {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.src
}

// ClientConfig presents the certificate and checks the server's against
// the CA bundle for serverName; before the first certificate it fails.
func (r *Requester) ClientConfig(serverName string) (*tls.Config, error) {
	src := r.source()
	if src == nil {
		return nil, fmt.Errorf("certrequest: no certificate from %s yet", r.cfg.SignerName)
	}
	return src.ClientConfig(serverName)
}

// ServerConfig serves the certificate and requires a client certificate
// the CA bundle checks (with clientNames, one of those names); before the
// first certificate every handshake fails.
func (r *Requester) ServerConfig(clientNames ...string) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			src := r.source()
			if src == nil {
				return nil, fmt.Errorf("certrequest: no certificate from %s yet", r.cfg.SignerName)
			}
			return src.ServerConfig(clientNames...).GetConfigForClient(nil)
		},
	}
}
