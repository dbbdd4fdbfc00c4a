package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"time"
)

// Pair is a certificate and its private key.
type Pair struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
}

// backdate is how far before now a certificate starts to be valid, so that
// a peer whose clock is a little behind accepts it.
const backdate = time.Hour

// NewCA returns a self-signed CA named cn, valid from now for validity.
func NewCA(cn string, now time.Time, validity time.Duration) (*Pair, error) {
	if cn == "" {
		return nil, errors.New("certs: CA common name: required")
	}
	if validity <= backdate {
		return nil, fmt.Errorf("certs: CA %s: validity %s: must be longer than %s", cn, validity, backdate)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("certs: CA %s key: %w", cn, err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	return sign(tmpl, tmpl, key, key)
}

// Request is what a leaf certificate says and may be used for.
type Request struct {
	// CommonName is the subject's name: a user name for a client
	// certificate, a host name for a serving one (required).
	CommonName string
	// Organizations are the subject's organizations (a client's groups).
	Organizations []string
	// DNSNames and IPs are the names a serving certificate covers.
	DNSNames []string
	IPs      []net.IP
	// Server and Client are the extended key usages; at least one.
	Server, Client bool
	// Validity is how long the certificate lasts from now (required).
	Validity time.Duration
}

func (r Request) check() error {
	switch {
	case r.CommonName == "":
		return errors.New("certs: Request.CommonName: required")
	case !r.Server && !r.Client:
		return fmt.Errorf("certs: %s: Request.Server or Request.Client: one is required", r.CommonName)
	case r.Validity <= backdate:
		return fmt.Errorf("certs: %s: Request.Validity %s: must be longer than %s", r.CommonName, r.Validity, backdate)
	case r.Server && len(r.DNSNames) == 0 && len(r.IPs) == 0:
		return fmt.Errorf("certs: %s: Request.DNSNames or Request.IPs: a serving certificate names its host", r.CommonName)
	}
	return nil
}

// Issue signs a new key's certificate for r with ca, valid from now.
func (ca *Pair) Issue(r Request, now time.Time) (*Pair, error) {
	tmpl, err := ca.template(r, now)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("certs: %s key: %w", r.CommonName, err)
	}
	return sign(tmpl, ca.Cert, key, ca.Key)
}

// Sign signs, with ca, a certificate for r of a key held elsewhere (the
// public key of a certificate signing request), valid from now.
func (ca *Pair) Sign(pub crypto.PublicKey, r Request, now time.Time) (*x509.Certificate, error) {
	tmpl, err := ca.template(r, now)
	if err != nil {
		return nil, err
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, pub, ca.Key)
	if err != nil {
		return nil, fmt.Errorf("certs: %s: %w", r.CommonName, err)
	}
	return x509.ParseCertificate(der)
}

// template is the certificate ca would sign for r at now.
func (ca *Pair) template(r Request, now time.Time) (*x509.Certificate, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	if ca == nil || ca.Cert == nil || !ca.Cert.IsCA {
		return nil, fmt.Errorf("certs: %s: the issuer is not a CA", r.CommonName)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: r.CommonName, Organization: r.Organizations},
		NotBefore:    now.Add(-backdate),
		NotAfter:     now.Add(r.Validity),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		DNSNames:     r.DNSNames,
		IPAddresses:  r.IPs,
	}
	if r.Server {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	if r.Client {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	// A leaf never outlives its CA: a peer would refuse the chain then.
	if tmpl.NotAfter.After(ca.Cert.NotAfter) {
		tmpl.NotAfter = ca.Cert.NotAfter
	}
	return tmpl, nil
}

// sign makes tmpl into key's certificate, signed by signer as parent.
func sign(tmpl, parent *x509.Certificate, key, signer *ecdsa.PrivateKey) (*Pair, error) {
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		return nil, fmt.Errorf("certs: %s: %w", tmpl.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("certs: %s: %w", tmpl.Subject.CommonName, err)
	}
	return &Pair{Cert: cert, Key: key}, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return n
}

// CertPEM is the certificate in PEM.
func (p *Pair) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.Cert.Raw})
}

// KeyPEM is the private key in PEM (SEC 1, "EC PRIVATE KEY").
func (p *Pair) KeyPEM() []byte {
	der, err := x509.MarshalECPrivateKey(p.Key)
	if err != nil {
		panic(err) // a P-256 key always marshals
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
}

// Parse reads a pair from PEM, checking that the key is the certificate's.
func Parse(certPEM, keyPEM []byte) (*Pair, error) {
	cb, _ := pem.Decode(certPEM)
	if cb == nil || cb.Type != "CERTIFICATE" {
		return nil, errors.New("certs: certificate: not a PEM CERTIFICATE")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("certs: certificate: %w", err)
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil {
		return nil, fmt.Errorf("certs: %s: key: not PEM", cert.Subject.CommonName)
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("certs: %s: key: %w", cert.Subject.CommonName, err)
	}
	pub, ok := cert.PublicKey.(*ecdsa.PublicKey)
	if !ok || !pub.Equal(&key.PublicKey) {
		return nil, fmt.Errorf("certs: %s: the key is not the certificate's", cert.Subject.CommonName)
	}
	return &Pair{Cert: cert, Key: key}, nil
}

// ParseCerts reads every certificate of a PEM bundle.
func ParseCerts(bundle []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for {
		var b *pem.Block
		b, bundle = pem.Decode(bundle)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certs: bundle: %w", err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("certs: bundle: no PEM certificate")
	}
	return out, nil
}

// Due reports whether c should be replaced at now: it is not yet valid,
// or less than renewBefore of its life is left.
func Due(c *x509.Certificate, now time.Time, renewBefore time.Duration) bool {
	return now.Before(c.NotBefore) || !now.Before(c.NotAfter.Add(-renewBefore))
}

// Fits reports whether leaf was issued by ca for r: same subject, the
// same names and usages, and a signature ca checks. A leaf that does not
// fit is issued again.
func Fits(leaf *x509.Certificate, ca *x509.Certificate, r Request) bool {
	if leaf.CheckSignatureFrom(ca) != nil || leaf.Subject.CommonName != r.CommonName ||
		!slices.Equal(leaf.Subject.Organization, r.Organizations) || !slices.Equal(leaf.DNSNames, r.DNSNames) {
		return false
	}
	if len(leaf.IPAddresses) != len(r.IPs) {
		return false
	}
	for i, ip := range r.IPs {
		if !leaf.IPAddresses[i].Equal(ip) {
			return false
		}
	}
	return slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageServerAuth) == r.Server &&
		slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageClientAuth) == r.Client
}

// RenewalFraction is KubeVirt's rule of when a certificate is renewed: when
// this fraction of its life (1/RenewalFraction) is left.
const RenewalFraction = 5

// RenewBefore is how long before its end a certificate of life d is renewed.
func RenewBefore(d time.Duration) time.Duration { return d / RenewalFraction }
