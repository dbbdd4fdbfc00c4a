package export

import (
	"crypto/x509"
	"encoding/pem"
	"strings"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
)

// ProxyServiceName is the export proxy's Service, which an Ingress routes
// users to (KubeVirt's name).
const ProxyServiceName = "virt-exportproxy"

// IngressHost is the host at which ing routes users to the Service
// service, as KubeVirt reads an Ingress for exports' external links: the
// first rule's host when service is the default backend, else the host of
// the first rule with a path to it; "" when ing does not route to it.
func IngressHost(ing *networkingv1.Ingress, service string) string {
	if b := ing.Spec.DefaultBackend; b != nil && b.Service != nil {
		if b.Service.Name != service || len(ing.Spec.Rules) == 0 {
			return ""
		}
		return ing.Spec.Rules[0].Host
	}
	for _, rule := range ing.Spec.Rules {
		if rule.HTTP == nil || rule.Host == "" {
			continue
		}
		for _, p := range rule.HTTP.Paths {
			if p.Backend.Service != nil && p.Backend.Service.Name == service {
				return rule.Host
			}
		}
	}
	return ""
}

// HostCert is what external links carry as the certificate of host, from
// the PEM certificates chain (an Ingress's TLS Secret's tls.crt): the one
// valid at now for host, with the certificates of its issuers in chain;
// else all of chain valid at now; "" when none is.
func HostCert(host string, chain []byte, now time.Time) string {
	var certs []*x509.Certificate
	for rest := chain; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if c, err := x509.ParseCertificate(b.Bytes); err == nil && b.Type == "CERTIFICATE" {
			certs = append(certs, c)
		}
	}
	valid := func(c *x509.Certificate) bool { return !now.Before(c.NotBefore) && now.Before(c.NotAfter) }
	var out strings.Builder
	add := func(c *x509.Certificate) { _ = pem.Encode(&out, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw}) }
	for _, c := range certs {
		if !valid(c) || c.VerifyHostname(host) != nil {
			continue
		}
		add(c)
		// Its issuers, as far as chain holds them.
		for issuer, seen := c, map[*x509.Certificate]bool{c: true}; ; {
			var next *x509.Certificate
			for _, p := range certs {
				if !seen[p] && valid(p) && issuer.CheckSignatureFrom(p) == nil {
					next = p
					break
				}
			}
			if next == nil {
				break
			}
			add(next)
			seen[next], issuer = true, next
		}
		return strings.TrimSpace(out.String())
	}
	for _, c := range certs {
		if valid(c) {
			add(c)
		}
	}
	return strings.TrimSpace(out.String())
}
