package export

import (
	"crypto/tls"
	"log"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
)

// NewHTTPServer returns the HTTPS server of h as the export server and the
// export proxy serve: HTTP/1.1 only, because a download is one long
// stream, which Go's HTTP/2 server sends in small frames at about half the
// rate (docs/performance.md, VM export); the certificate of each handshake
// from getCert, so that a renewed one serves new connections; the
// server's own messages (failed handshakes) to logger at V(1).
func NewHTTPServer(h http.Handler, getCert func(*tls.ClientHelloInfo) (*tls.Certificate, error), logger logr.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		TLSConfig:         &tls.Config{GetCertificate: getCert, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}},
		TLSNextProto:      map[string]func(*http.Server, *tls.Conn, http.Handler){},
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       60 * time.Second,
		ErrorLog:          log.New(logWriter{logger}, "", 0),
	}
}

// logWriter hands the HTTP server's own messages (TLS handshakes that
// failed, ...) to the logger.
type logWriter struct{ log logr.Logger }

func (w logWriter) Write(b []byte) (int, error) {
	w.log.V(1).Info(strings.TrimSpace(string(b)))
	return len(b), nil
}
