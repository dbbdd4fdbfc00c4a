package export

import (
	"context"
	"fmt"
	"time"

	"github.com/virtkit/virtkit/deploy/certs"
)

// Signer issues the serving certificates of export server pods. Declared
// here, where it is used.
type Signer interface {
	// Issue returns a certificate and key (PEM) for the host names,
	// valid from now for validity, and the CA bundle (PEM) clients verify
	// it with.
	Issue(ctx context.Context, names []string, now time.Time, validity time.Duration) (certPEM, keyPEM, caPEM []byte, err error)
}

// CASigner signs with one CA held in memory.
type CASigner struct{ CA *certs.Pair }

var _ Signer = CASigner{}

// Issue implements Signer.
func (s CASigner) Issue(_ context.Context, names []string, now time.Time, validity time.Duration) ([]byte, []byte, []byte, error) {
	if s.CA == nil || len(names) == 0 {
		return nil, nil, nil, fmt.Errorf("export signer: a CA and at least one name are required")
	}
	p, err := s.CA.Issue(certs.Request{CommonName: names[0], DNSNames: names, Server: true, Validity: validity}, now)
	if err != nil {
		return nil, nil, nil, err
	}
	return p.CertPEM(), p.KeyPEM(), s.CA.CertPEM(), nil
}

// PairSigner signs with the CA its Pair function returns at each
// certificate, such as a CA read from a mounted Secret
// (deploy/certs/certfiles.Source.Pair), so that a renewed CA signs the
// next server's certificate.
type PairSigner struct{ Pair func() (*certs.Pair, error) }

var _ Signer = PairSigner{}

// Issue implements Signer.
func (s PairSigner) Issue(ctx context.Context, names []string, now time.Time, validity time.Duration) ([]byte, []byte, []byte, error) {
	ca, err := s.Pair()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("export signer: the CA: %w", err)
	}
	if !ca.Cert.IsCA {
		return nil, nil, nil, fmt.Errorf("export signer: %q is not a CA", ca.Cert.Subject.CommonName)
	}
	return CASigner{CA: ca}.Issue(ctx, names, now, validity)
}
