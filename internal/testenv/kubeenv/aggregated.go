package kubeenv

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/virtkit/virtkit/internal/testenv"
)

// FrontProxyClientName is the common name of the client certificate the
// apiserver's aggregator presents to extension API servers.
const FrontProxyClientName = "front-proxy-client"

// AggregatedAPI serves an extension API (such as subresources.kubevirt.io)
// from this test process behind envtest's kube-apiserver, as measured on
// the development machines: the aggregator reaches https://localhost:PORT through an
// ExternalName Service (externalName: localhost) whose APIService has
// service.port = PORT; the serving certificate carries the SAN
// SERVICE.NAMESPACE.svc and matches the APIService caBundle; the apiserver
// runs with front-proxy flags so the server can trust X-Remote-User and
// X-Remote-Group from the aggregator's client certificate.
//
// Use it in three steps:
//
//	agg := kubeenv.NewAggregatedAPI(t, "subresources.kubevirt.io", "v1")
//	cp := kubeenv.ControlPlane(t, agg.ControlPlaneOption())
//	agg.Serve(t, cp, handler) // handler trusts agg.ClientCA / agg.AllowedNames
type AggregatedAPI struct {
	Group, Version string
	// Namespace and Service name the ExternalName Service (kubevirt/virt-api).
	Namespace, Service string
	// ClientCA verifies the aggregator's client certificate; ClientCAFile is
	// the same in PEM (the apiserver's --requestheader-client-ca-file).
	ClientCA     *x509.CertPool
	ClientCAFile string
	// AllowedNames are the common names the aggregator's certificate may have.
	AllowedNames []string
	// ServingCertFile and ServingKeyFile are the server's certificate
	// (SANs: SERVICE.NAMESPACE.svc, localhost, 127.0.0.1) and key in PEM;
	// ServingCA is the PEM of the CA that signed it (the caBundle), in
	// ServingCAFile too.
	ServingCertFile, ServingKeyFile string
	ServingCA                       []byte
	ServingCAFile                   string
	// Port is the local port the server listens on.
	Port int

	dir      string
	listener net.Listener
	serving  tls.Certificate
	clientCA *ca
}

// NewAggregatedAPI makes the certificates and reserves a port for an
// extension API server of group/version.
func NewAggregatedAPI(t testing.TB, group, version string) *AggregatedAPI {
	t.Helper()
	a := &AggregatedAPI{Group: group, Version: version, Namespace: "kubevirt", Service: "virt-api",
		AllowedNames: []string{FrontProxyClientName}, dir: testenv.Dir(t)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testenv: reserving a port for the aggregated API: %v", err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	a.listener, a.Port = ln, ln.Addr().(*net.TCPAddr).Port

	clientCA, err := newCA("front-proxy-ca")
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := clientCA.issue(FrontProxyClientName, nil, nil, x509.ExtKeyUsageClientAuth)
	if err != nil {
		t.Fatal(err)
	}
	servingCA, err := newCA("virt-api-ca")
	if err != nil {
		t.Fatal(err)
	}
	serving, err := servingCA.issue(a.Service+"."+a.Namespace+".svc",
		[]string{a.Service + "." + a.Namespace + ".svc", "localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)}, x509.ExtKeyUsageServerAuth)
	if err != nil {
		t.Fatal(err)
	}
	a.clientCA = clientCA
	a.ClientCA = x509.NewCertPool()
	a.ClientCA.AddCert(clientCA.cert)
	a.ServingCA = clientCertPEM(servingCA.cert)
	a.serving, err = tls.X509KeyPair(serving.certPEM, serving.keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"front-proxy-ca.crt":     clientCertPEM(clientCA.cert),
		"front-proxy-client.crt": proxy.certPEM,
		"front-proxy-client.key": proxy.keyPEM,
		"serving.crt":            serving.certPEM,
		"serving.key":            serving.keyPEM,
		"serving-ca.crt":         a.ServingCA,
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(a.dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	a.ClientCAFile = filepath.Join(a.dir, "front-proxy-ca.crt")
	a.ServingCertFile, a.ServingKeyFile = filepath.Join(a.dir, "serving.crt"), filepath.Join(a.dir, "serving.key")
	a.ServingCAFile = filepath.Join(a.dir, "serving-ca.crt")
	return a
}

// ControlPlaneOption configures the apiserver's aggregator: its client
// certificate and the request-header flags.
func (a *AggregatedAPI) ControlPlaneOption() ControlPlaneOption {
	return func(env *envtest.Environment) {
		args := env.ControlPlane.GetAPIServer().Configure()
		args.Set("requestheader-client-ca-file", a.ClientCAFile)
		args.Set("requestheader-allowed-names", FrontProxyClientName)
		args.Set("requestheader-username-headers", "X-Remote-User")
		args.Set("requestheader-group-headers", "X-Remote-Group")
		args.Set("requestheader-extra-headers-prefix", "X-Remote-Extra-")
		args.Set("proxy-client-cert-file", filepath.Join(a.dir, "front-proxy-client.crt"))
		args.Set("proxy-client-key-file", filepath.Join(a.dir, "front-proxy-client.key"))
	}
}

// TLSConfig is the server side TLS configuration: the serving certificate,
// and client certificates requested (not required: the aggregator's is
// checked by the handler, webhook calls come without one).
func (a *AggregatedAPI) TLSConfig() *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{a.serving}, ClientAuth: tls.RequestClientCert, MinVersion: tls.VersionTLS12}
}

// ReleasePort closes the reserved listener so another process (a daemon
// under test) can listen on Port.
func (a *AggregatedAPI) ReleasePort() { _ = a.listener.Close() }

// Serve serves h on Port over TLSConfig until the test ends, then Registers.
func (a *AggregatedAPI) Serve(t testing.TB, cp *ControlPlaneEnv, h http.Handler) {
	t.Helper()
	srv := &http.Server{Handler: h, TLSConfig: a.TLSConfig(), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.ServeTLS(a.listener, "", "") }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx) // hijacked websockets are closed by their handlers
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("testenv: aggregated API server: %v", err)
		}
	})
	a.Register(t, cp)
}

// Register creates the Namespace, the ExternalName Service and the
// APIService, then waits until the aggregator reports the APIService
// Available and serves its discovery document.
func (a *AggregatedAPI) Register(t testing.TB, cp *ControlPlaneEnv) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := cp.Client
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: a.Namespace}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: a.Namespace, Name: a.Service},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost",
				Ports: []corev1.ServicePort{{Name: "https", Port: int32(a.Port)}}}},
		a.APIService(),
	}
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("testenv: creating %T %s: %v", o, o.GetName(), err)
		}
	}
	cs, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	var last error
	for {
		last = a.available(ctx, c)
		if last == nil {
			_, last = cs.Discovery().ServerResourcesForGroupVersion(a.Group + "/" + a.Version)
			if last == nil {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("testenv: APIService %s.%s did not become available: %v", a.Version, a.Group, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// APIService is the APIService object Register creates.
func (a *AggregatedAPI) APIService() *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1",
		"kind":       "APIService",
		"metadata":   map[string]any{"name": a.Version + "." + a.Group},
		"spec": map[string]any{
			"group": a.Group, "version": a.Version,
			"service":              map[string]any{"namespace": a.Namespace, "name": a.Service, "port": int64(a.Port)},
			"caBundle":             base64.StdEncoding.EncodeToString(a.ServingCA),
			"groupPriorityMinimum": int64(1000), "versionPriority": int64(15),
		},
	}}
	return u
}

func (a *AggregatedAPI) available(ctx context.Context, c client.Client) error {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("apiregistration.k8s.io/v1")
	u.SetKind("APIService")
	if err := c.Get(ctx, client.ObjectKey{Name: a.Version + "." + a.Group}, u); err != nil {
		return err
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, raw := range conds {
		m, _ := raw.(map[string]any)
		if m["type"] == "Available" {
			if m["status"] == "True" {
				return nil
			}
			return fmt.Errorf("condition Available=%v: %v: %v", m["status"], m["reason"], m["message"])
		}
	}
	return errors.New("no Available condition yet")
}

// ca is a certificate authority for tests.
type ca struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

type issued struct{ certPEM, keyPEM []byte }

func newCA(cn string) (*ca, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("testenv: CA %s: %w", cn, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &ca{cert: cert, key: key}, nil
}

func (c *ca) issue(cn string, dns []string, ips []net.IP, usage x509.ExtKeyUsage) (issued, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return issued{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: cn}, DNSNames: dns, IPAddresses: ips,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		return issued{}, fmt.Errorf("testenv: certificate %s: %w", cn, err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return issued{}, err
	}
	return issued{
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}),
	}, nil
}

func clientCertPEM(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	return n
}

// IssueClientCert returns a client certificate with common name cn signed
// by the aggregator's client CA: a test can act as the aggregator, or as a
// stranger with the right CA but a name not in AllowedNames.
func (a *AggregatedAPI) IssueClientCert(t testing.TB, cn string) tls.Certificate {
	t.Helper()
	c, err := a.clientCA.issue(cn, nil, nil, x509.ExtKeyUsageClientAuth)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(c.certPEM, c.keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return pair
}
