package certs

import (
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
)

// PeerNamed returns a check of a TLS connection whose peer certificate was
// already verified against a CA: its common name must be one of names.
// Use it as tls.Config.VerifyConnection where one CA signs certificates
// for several parties and only some of them may connect (virt-api's to a
// handler, not another handler's or an administrator's).
func PeerNamed(names ...string) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("certs: the peer sent no certificate")
		}
		if cn := cs.PeerCertificates[0].Subject.CommonName; !slices.Contains(names, cn) {
			return fmt.Errorf("certs: peer %q is not one of %q", cn, names)
		}
		return nil
	}
}
