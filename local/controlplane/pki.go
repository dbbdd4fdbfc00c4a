package controlplane

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/virtkit/virtkit/deploy/certs"
)

// certValidity is how long the generated certificates last; a local cluster
// is recreated long before.
const certValidity = 10 * 365 * 24 * time.Hour

// PKI names the files of the cluster's certificates and keys, all PEM,
// under DataDir/pki.
type PKI struct{ Dir string }

func (p PKI) path(name string) string { return filepath.Join(p.Dir, name) }

// CACert is the cluster CA: it signs the apiserver's serving certificate and
// every client certificate.
func (p PKI) CACert() string { return p.path("ca.crt") }

// CAKey is the cluster CA's key (also the controller-manager's signing key).
func (p PKI) CAKey() string { return p.path("ca.key") }

// ExportCACert is the export CA: it signs the serving certificates of
// VirtualMachineExport servers, and export links name it.
func (p PKI) ExportCACert() string { return p.path(exportCA + ".crt") }

// ExportCAKey is the export CA's key, which signs with ExportCACert.
func (p PKI) ExportCAKey() string { return p.Key(exportCA) }

// ExportCA returns the export CA's certificate and key.
func (p PKI) ExportCA() (*certs.Pair, error) { return loadPair(p.Cert(exportCA), p.Key(exportCA)) }

// exportCA names the export CA's files.
const exportCA = "export-ca"

// FrontProxyCACert signs the aggregator's client certificate (requestheader CA).
func (p PKI) FrontProxyCACert() string { return p.path("front-proxy-ca.crt") }

// ServiceAccountKey signs service account tokens; ServiceAccountPub checks them.
func (p PKI) ServiceAccountKey() string { return p.path("sa.key") }

// ServiceAccountPub is the public half of ServiceAccountKey.
func (p PKI) ServiceAccountPub() string { return p.path("sa.pub") }

// Cert and Key are the files of a named leaf certificate ("apiserver",
// "admin", "front-proxy-client", ...).
func (p PKI) Cert(name string) string { return p.path(name + ".crt") }

// Key is the key of Cert(name).
func (p PKI) Key(name string) string { return p.path(name + ".key") }

// leaf describes one certificate to issue.
type leaf struct {
	name   string
	cn     string
	orgs   []string
	server bool
	ca     string // "ca" or "front-proxy-ca"
}

// leaves are the certificates a cluster needs.
func leaves() []leaf {
	return []leaf{
		{name: "apiserver", cn: "kube-apiserver", server: true, ca: "ca"},
		{name: "apiserver-etcd-client", cn: "kube-apiserver-etcd-client", ca: "ca"},
		{name: "admin", cn: "virt-local-admin", orgs: []string{"system:masters"}, ca: "ca"},
		{name: "scheduler", cn: "system:kube-scheduler", ca: "ca"},
		{name: "controller-manager", cn: "system:kube-controller-manager", ca: "ca"},
		{name: FrontProxyClientCert, cn: "front-proxy-client", ca: "front-proxy-ca"},
		// The apiserver's identity towards kubelets (logs, exec, port
		// forwarding); a kubelet authorizes it through the apiserver, and
		// KubeletClientUser is bound to system:kubelet-api-admin.
		{name: KubeletClientCert, cn: KubeletClientUser, ca: "ca"},
	}
}

// ensurePKI creates every missing CA, key and certificate; existing files
// are kept, so a restarted cluster keeps its identity and its tokens stay valid.
func ensurePKI(p PKI, serviceIP net.IP) error {
	if err := os.MkdirAll(p.Dir, 0o700); err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	cas := map[string]*certs.Pair{}
	for _, name := range []string{"ca", "front-proxy-ca", exportCA} {
		is, err := ensureCA(p, name)
		if err != nil {
			return err
		}
		cas[name] = is
	}
	if !exists(p.ServiceAccountKey()) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return fmt.Errorf("pki: service account key: %w", err)
		}
		pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
		if err != nil {
			return fmt.Errorf("pki: service account key: %w", err)
		}
		der, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return fmt.Errorf("pki: service account key: %w", err)
		}
		if err := writePEM(p.ServiceAccountPub(), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})); err != nil {
			return err
		}
		if err := writePEM(p.ServiceAccountKey(), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})); err != nil {
			return err
		}
	}
	for _, l := range leaves() {
		if exists(p.Cert(l.name)) && exists(p.Key(l.name)) {
			continue
		}
		r := certs.Request{CommonName: l.cn, Organizations: l.orgs, Client: !l.server, Server: l.server}
		if l.server {
			r.DNSNames = []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}
			r.IPs = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback, serviceIP}
		}
		if err := issue(p, cas[l.ca], l.name, r); err != nil {
			return err
		}
	}
	return nil
}

// KubeletClientCert names the apiserver's client certificate towards
// kubelets (PKI.Cert(KubeletClientCert)); KubeletClientUser is its user.
// FrontProxyClientCert names its certificate towards extension API
// servers and the webhooks of Config.WebhookClientHosts.
const (
	KubeletClientCert    = "apiserver-kubelet-client"
	KubeletClientUser    = "kube-apiserver-kubelet-client"
	FrontProxyClientCert = "front-proxy-client"
)

// EnsureClientCert issues, once, a client certificate signed by the cluster
// CA for user cn in the groups orgs, in Cert(name) and Key(name). An
// existing one is kept when it names the same user and groups. It is for
// clients such as a node's kubelet (cn system:node:NAME, group
// system:nodes).
func (p PKI) EnsureClientCert(name, cn string, orgs ...string) error {
	if c, err := readCert(p.Cert(name)); err == nil && exists(p.Key(name)) &&
		c.Subject.CommonName == cn && slices.Equal(c.Subject.Organization, orgs) {
		return nil
	}
	ca, err := loadPair(p.CACert(), p.CAKey())
	if err != nil {
		return err
	}
	return issue(p, ca, name, certs.Request{CommonName: cn, Organizations: orgs, Client: true})
}

// EnsureCert issues, once, the certificate r asks for (its Validity is
// the PKI's own), signed by the cluster CA, in Cert(name) and Key(name);
// an existing one is kept when it fits r. It is for certificates whose
// shape another package owns, such as a node's migration certificate
// (certs.NodeRequest).
func (p PKI) EnsureCert(name string, r certs.Request) error {
	ca, err := loadPair(p.CACert(), p.CAKey())
	if err != nil {
		return err
	}
	if c, err := readCert(p.Cert(name)); err == nil && exists(p.Key(name)) && certs.Fits(c, ca.Cert, r) {
		return nil
	}
	return issue(p, ca, name, r)
}

// readCert reads the first certificate of a PEM file.
func readCert(file string) (*x509.Certificate, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, fmt.Errorf("pki: %s is not PEM", file)
	}
	return x509.ParseCertificate(block.Bytes)
}

// ensureCA loads the CA name, or makes it when its files are missing.
func ensureCA(p PKI, name string) (*certs.Pair, error) {
	certFile, keyFile := p.Cert(name), p.Key(name)
	if exists(certFile) && exists(keyFile) {
		return loadPair(certFile, keyFile)
	}
	ca, err := certs.NewCA("virt-local-"+name, time.Now(), certValidity)
	if err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	if err := writePEM(keyFile, ca.KeyPEM()); err != nil {
		return nil, err
	}
	return ca, writePEM(certFile, ca.CertPEM())
}

// issue signs r with ca for certValidity, into Cert(name) and Key(name).
func issue(p PKI, ca *certs.Pair, name string, r certs.Request) error {
	r.Validity = certValidity
	leaf, err := ca.Issue(r, time.Now())
	if err != nil {
		return fmt.Errorf("pki: %s: %w", name, err)
	}
	if err := writePEM(p.Key(name), leaf.KeyPEM()); err != nil {
		return err
	}
	return writePEM(p.Cert(name), leaf.CertPEM())
}

func loadPair(certFile, keyFile string) (*certs.Pair, error) {
	cb, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	kb, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	pair, err := certs.Parse(cb, kb)
	if err != nil {
		return nil, fmt.Errorf("pki: %s: %w", certFile, err)
	}
	return pair, nil
}

// writePEM writes the file atomically, readable by the owner only.
func writePEM(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	return nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, fs.ErrNotExist)
}

// EnsureServingCert issues, once, a serving certificate signed by the
// cluster CA for the given DNS names or IP addresses and loopback, in
// Cert(name) and Key(name); an existing one is kept if it names every one.
// It is for servers the apiserver or virt-api calls (virt-api as an
// aggregated API and webhook, a handler's node API): they then trust CACert.
func (p PKI) EnsureServingCert(name string, names ...string) error {
	if c, err := readCert(p.Cert(name)); err == nil && exists(p.Key(name)) && coversAll(c, names) {
		return nil
	}
	ca, err := loadPair(p.CACert(), p.CAKey())
	if err != nil {
		return err
	}
	dns, ips := []string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			ips = append(ips, ip)
		} else {
			dns = append(dns, n)
		}
	}
	return issue(p, ca, name, certs.Request{CommonName: name, DNSNames: dns, IPs: ips, Server: true})
}

func coversAll(c *x509.Certificate, names []string) bool {
	for _, n := range names {
		if c.VerifyHostname(n) != nil {
			return false
		}
	}
	return true
}
