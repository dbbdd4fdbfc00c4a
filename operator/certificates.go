package operator

import (
	"bytes"
	"time"

	"github.com/virtkit/virtkit/deploy"
	"github.com/virtkit/virtkit/deploy/certs"
	"github.com/virtkit/virtkit/virtapi/nodeapi"
)

// The certificates' Secrets and the CA bundle's ConfigMap, KubeVirt's
// names, all in the operator's namespace. Each Secret is of type
// kubernetes.io/tls (tls.crt, tls.key); the handler's two also carry
// ca.crt, the CA bundle their peer's certificate is checked with.
const (
	// SecretCA holds the CA that signs every other certificate.
	SecretCA = "kubevirt-ca"
	// ConfigMapCA's key CABundleKey holds the CA bundle: the current CA
	// and any earlier one not yet expired, so that certificates it signed
	// stay trusted while they are replaced.
	ConfigMapCA = "kubevirt-ca"
	CABundleKey = "ca-bundle"
	// SecretVirtAPI is virt-api's serving certificate, for its Service's
	// names (the apiserver calls the webhooks and the subresource API).
	SecretVirtAPI = "kubevirt-virt-api-certs"
	// SecretHandlerServer is every handler's node API certificate, naming
	// HandlerServerName.
	SecretHandlerServer = "kubevirt-virt-handler-server-certs"
	// SecretHandlerClient is virt-api's client certificate towards the
	// handlers.
	SecretHandlerClient = "kubevirt-virt-handler-certs"
	// SecretOperator is the operator's serving certificate, for its
	// webhooks ([Webhook]).
	SecretOperator = "kubevirt-operator-certs"
	// SecretExportProxy is the export proxy's serving certificate, for
	// its Service's names.
	SecretExportProxy = "kubevirt-exportproxy-certs"
	// SecretExportCA holds the export CA, which signs the certificates of
	// VirtualMachineExport servers (virt-controller issues them).
	SecretExportCA = "kubevirt-export-ca"
	// CACertKey is the key of the CA bundle in the handlers' Secrets.
	CACertKey = "ca.crt"
)

// CACommonName and ExportCACommonName are the CAs' names, KubeVirt's.
const (
	CACommonName       = "kubevirt.io"
	ExportCACommonName = "export.kubevirt.io"
)

// Leaf is one certificate the installation needs: its Secret, what it
// says, and whether its Secret carries the CA bundle.
type Leaf struct {
	Secret  string
	Request certs.Request
	WithCA  bool
}

// Leaves are the certificates of an installation by an operator with
// settings s, each valid for validity.
func Leaves(s Settings, validity time.Duration) []Leaf {
	namespace := s.Namespace
	svc := "virt-api." + namespace
	proxy := deploy.ExportProxyName + "." + namespace
	dns, ips := webhookNames(s)
	return []Leaf{
		{Secret: SecretOperator, Request: certs.Request{CommonName: WebhookService + "." + namespace + ".svc",
			DNSNames: dns, IPs: ips, Server: true, Validity: validity}},
		{Secret: SecretVirtAPI, Request: certs.Request{CommonName: svc + ".svc",
			DNSNames: []string{"virt-api", svc, svc + ".svc", svc + ".svc.cluster.local"}, Server: true, Validity: validity}},
		{Secret: SecretHandlerServer, WithCA: true, Request: certs.Request{CommonName: "kubevirt.io:system:node:virt-handler",
			DNSNames: []string{HandlerServerName(namespace)}, Server: true, Validity: validity}},
		{Secret: SecretHandlerClient, WithCA: true, Request: certs.Request{CommonName: nodeapi.ClientName,
			Client: true, Validity: validity}},
		{Secret: SecretExportProxy, Request: certs.Request{CommonName: proxy + ".svc",
			DNSNames: []string{deploy.ExportProxyName, proxy, proxy + ".svc", proxy + ".svc.cluster.local"}, Server: true, Validity: validity}},
	}
}

// Bundle is the CA bundle after a rotation to current: current first, then
// every CA of previous that is not current and not expired at now.
func Bundle(current *certs.Pair, previous []byte, now time.Time) []byte {
	out := bytes.Clone(current.CertPEM())
	if len(previous) == 0 {
		return out
	}
	old, err := certs.ParseCerts(previous)
	if err != nil {
		return out
	}
	for _, c := range old {
		if c.IsCA && !c.Equal(current.Cert) && now.Before(c.NotAfter) {
			out = append(out, (&certs.Pair{Cert: c}).CertPEM()...)
		}
	}
	return out
}
