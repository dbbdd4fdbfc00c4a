package certfiles

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/virtkit/virtkit/deploy/certs"
)

// maxFileSize bounds what is read of each file: PEM certificates and keys
// are a few KiB, a bundle of CAs a little more.
const maxFileSize = 1 << 20

// Source is a key pair and an optional CA bundle read from files, and read
// again when they change.
type Source struct {
	certFile, keyFile, caFile string
	interval                  time.Duration
	now                       func() time.Time
	log                       logr.Logger

	mu      sync.Mutex
	checked time.Time
	raw     [3][]byte
	cert    *tls.Certificate
	pool    *x509.CertPool
}

// Option configures a Source.
type Option func(*Source)

// DefaultInterval is how long a read of the files stays fresh unless
// WithInterval says otherwise: a file changed is served at most this late.
const DefaultInterval = 10 * time.Second

// WithInterval sets how long a read stays fresh (default DefaultInterval).
func WithInterval(d time.Duration) Option { return func(s *Source) { s.interval = d } }

// WithClock sets the clock that decides when to read again.
func WithClock(now func() time.Time) Option { return func(s *Source) { s.now = now } }

// WithLogger sets where failed re-reads are reported.
func WithLogger(l logr.Logger) Option { return func(s *Source) { s.log = l } }

// New reads certFile and keyFile (PEM) and, when caFile is not empty, the
// CA bundle in it. It fails when they are unreadable or invalid.
func New(certFile, keyFile, caFile string, opts ...Option) (*Source, error) {
	s := &Source{certFile: certFile, keyFile: keyFile, caFile: caFile, interval: DefaultInterval, now: time.Now, log: logr.Discard()}
	for _, o := range opts {
		o(s)
	}
	if certFile == "" || keyFile == "" {
		return nil, errors.New("certfiles: a certificate and a key file are required")
	}
	if err := s.reload(); err != nil {
		return nil, err
	}
	return s, nil
}

// current returns the key pair and CA pool, reading the files again when
// the last read is older than the interval.
func (s *Source) current() (*tls.Certificate, *x509.CertPool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.now().Sub(s.checked) >= s.interval {
		if err := s.reloadLocked(); err != nil {
			s.log.Error(err, "keeping the certificate read before", "cert", s.certFile)
		}
	}
	return s.cert, s.pool
}

func (s *Source) reload() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reloadLocked()
}

func (s *Source) reloadLocked() error {
	s.checked = s.now()
	var raw [3][]byte
	for i, f := range []string{s.certFile, s.keyFile, s.caFile} {
		if f == "" {
			continue
		}
		b, err := readBounded(f)
		if err != nil {
			return err
		}
		raw[i] = b
	}
	if s.cert != nil && bytes.Equal(raw[0], s.raw[0]) && bytes.Equal(raw[1], s.raw[1]) && bytes.Equal(raw[2], s.raw[2]) {
		return nil
	}
	cert, err := tls.X509KeyPair(raw[0], raw[1])
	if err != nil {
		return fmt.Errorf("certfiles: %s, %s: %w", s.certFile, s.keyFile, err)
	}
	var pool *x509.CertPool
	if s.caFile != "" {
		pool = x509.NewCertPool()
		if !pool.AppendCertsFromPEM(raw[2]) {
			return fmt.Errorf("certfiles: %s: no PEM certificate", s.caFile)
		}
	}
	s.raw, s.cert, s.pool = raw, &cert, pool
	return nil
}

// readBounded reads at most maxFileSize of path, refusing a larger file.
func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("certfiles: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("certfiles: %s: %w", path, err)
	}
	if len(b) > maxFileSize {
		return nil, fmt.Errorf("certfiles: %s: larger than %d bytes", path, maxFileSize)
	}
	return b, nil
}

// GetCertificate returns the current key pair, for tls.Config.GetCertificate.
func (s *Source) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	cert, _ := s.current()
	return cert, nil
}

// ServerConfig serves the current certificate and, with a CA bundle,
// requires a client certificate it signed; with clientNames, also one of
// those common names.
func (s *Source) ServerConfig(clientNames ...string) *tls.Config {
	return &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: s.GetCertificate,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			cert, pool := s.current()
			c := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{*cert}}
			if pool != nil {
				c.ClientCAs, c.ClientAuth = pool, tls.RequireAndVerifyClientCert
			}
			if len(clientNames) > 0 {
				c.VerifyConnection = certs.PeerNamed(clientNames...)
			}
			return c, nil
		},
	}
}

// ClientConfig presents the current certificate and, with a CA bundle,
// checks the server's against it for serverName, which is then required
// (the name the server's certificate must carry, whatever address is
// dialled). Without a CA bundle the system's roots check the server for
// serverName or, when empty, the dialled host, as usual.
func (s *Source) ClientConfig(serverName string) (*tls.Config, error) {
	c := &tls.Config{
		MinVersion: tls.VersionTLS12,
		ServerName: serverName,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			cert, _ := s.current()
			return cert, nil
		},
	}
	if s.caFile == "" {
		return c, nil
	}
	if serverName == "" {
		return nil, errors.New("certfiles: a client with a CA bundle of its own needs the server's name")
	}
	// The roots change with the files, which a tls.Config's RootCAs
	// cannot: the chain and the name are checked here instead, against
	// the bundle of the moment.
	c.InsecureSkipVerify = true
	c.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("certfiles: the server sent no certificate")
		}
		_, pool := s.current()
		inter := x509.NewCertPool()
		for _, ic := range cs.PeerCertificates[1:] {
			inter.AddCert(ic)
		}
		_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter,
			DNSName: serverName, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
		return err
	}
	return c, nil
}

// Pair returns the current key pair as a certs.Pair, to sign with: a CA
// read from files (a mounted kubernetes.io/tls Secret) that is renewed
// signs with its new key from the next read on.
func (s *Source) Pair() (*certs.Pair, error) {
	s.current()
	s.mu.Lock()
	raw := s.raw
	s.mu.Unlock()
	p, err := certs.Parse(raw[0], raw[1])
	if err != nil {
		return nil, fmt.Errorf("certfiles: %s, %s: %w", s.certFile, s.keyFile, err)
	}
	return p, nil
}

// Pool returns the current CA pool of the CA file, read again as the
// certificate is; nil without a CA file.
func (s *Source) Pool() (*x509.CertPool, error) {
	_, pool := s.current()
	if pool == nil {
		return nil, fmt.Errorf("certfiles: no CA file")
	}
	return pool, nil
}
