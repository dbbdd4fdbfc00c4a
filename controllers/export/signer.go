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
