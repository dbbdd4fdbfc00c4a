package importer

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"time"
)

// newTransport is the HTTP transport of the web and registry sources: the
// environment's proxy; timeouts for dialling, the TLS handshake and the
// response headers, none for the whole transfer (images are large); no
// transparently compressed bodies (a .gz image must arrive as it is
// stored: its bytes are counted and decompressed by the importer). The
// roots trusted are caPEM's when set (none of the system's), else the
// system's, and proxyPEM's besides (the CAs of a proxy that intercepts
// TLS, or is reached over it: CDI's trustedCAProxy); skipVerify checks no
// certificate (a registry listed as insecure).
func newTransport(caPEM, proxyPEM []byte, skipVerify bool) (*http.Transport, error) {
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: skipVerify} //nolint:gosec // only for a registry the CDIConfig lists as insecure
	var pool *x509.CertPool
	if len(caPEM) > 0 {
		pool = x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			return nil, errors.New("the CA bundle holds no PEM certificate")
		}
	}
	if len(proxyPEM) > 0 {
		if pool == nil {
			var err error
			if pool, err = x509.SystemCertPool(); err != nil {
				pool = x509.NewCertPool()
			}
		}
		if !pool.AppendCertsFromPEM(proxyPEM) {
			return nil, errors.New("the proxy's CA bundle holds no PEM certificate")
		}
	}
	tlsConfig.RootCAs = pool
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:       tlsConfig,
		TLSHandshakeTimeout:   15 * time.Second,
		ResponseHeaderTimeout: time.Minute,
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true,
		ForceAttemptHTTP2:     true,
	}, nil
}
