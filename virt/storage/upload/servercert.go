package upload

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"time"
)

// ServerCertValidity is how long an upload server's certificate is valid.
// The proxy pins the certificate itself, so its dates matter little; they
// are long because an upload pod waits for its user as long as it takes.
const ServerCertValidity = 10 * 365 * 24 * time.Hour

// maxCertPEM bounds a pinned certificate.
const maxCertPEM = 16 << 10

// NewServerCert returns a new self-signed certificate (PEM) and its key
// (PEM) for the upload server called name. Whoever makes the upload pod
// makes it, hands the key to the pod only, and publishes the certificate
// for the proxy to pin (PinnedTLS): no CA is involved.
func NewServerCert(name string, now time.Time) (certPEM, keyPEM []byte, err error) {
	return selfSigned(name, now, x509.ExtKeyUsageServerAuth)
}

// NewClientCert returns a new self-signed client certificate (PEM) and its
// key (PEM) named name: a clone's source pod presents it to the target's
// upload server, which trusts it as its own CA (ServerTLS).
func NewClientCert(name string, now time.Time) (certPEM, keyPEM []byte, err error) {
	return selfSigned(name, now, x509.ExtKeyUsageClientAuth)
}

func selfSigned(name string, now time.Time, usage x509.ExtKeyUsage) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	sn, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: sn, Subject: pkix.Name{CommonName: name},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(ServerCertValidity),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
	}
	if usage == x509.ExtKeyUsageServerAuth {
		tmpl.DNSNames = []string{name}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, fmt.Errorf("self-signed certificate %s: %w", name, err)
	}
	kd, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd}), nil
}

// PinnedTLS is base (the proxy's client TLS: its certificate) with the
// server's certificate checked to be exactly certPEM, and nothing else.
func PinnedTLS(base *tls.Config, certPEM []byte) (*tls.Config, error) {
	if len(certPEM) > maxCertPEM {
		return nil, fmt.Errorf("the upload server's certificate is longer than %d bytes", maxCertPEM)
	}
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("the upload server's certificate is not a PEM certificate")
	}
	want := block.Bytes
	cfg := base.Clone()
	if cfg == nil {
		cfg = &tls.Config{}
	}
	cfg.RootCAs, cfg.ServerName = nil, ""
	cfg.MinVersion = tls.VersionTLS12
	// The pin replaces chain and name checks: the one certificate the
	// upload pod was made with is the only one accepted.
	cfg.InsecureSkipVerify = true //nolint:gosec // verified by the pin below
	cfg.VerifyConnection = nil
	cfg.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
		if len(raw) == 0 || !bytes.Equal(raw[0], want) {
			return errors.New("the upload server presented a certificate other than the one its pod was made with")
		}
		return nil
	}
	return cfg, nil
}
