// Command virt-api serves virtkit's admission webhooks (package admission)
// and the subresources.kubevirt.io aggregated API (package subresources) on
// one TLS port, as KubeVirt's virt-api does. It registers nothing unless run
// with --install, which creates or updates the APIService, the Service, the
// webhook configurations and the ClusterRoles users need.
//
//	virt-api --tls-cert-file tls.crt --tls-private-key-file tls.key \
//	    [--requestheader-client-ca-file front-proxy-ca.crt --requestheader-allowed-names front-proxy-client] \
//	    [--handler-ca-file ca.crt --handler-client-cert-file client.crt --handler-client-key-file client.key] \
//	    [--install --ca-bundle-file ca.crt]
//
// Without --requestheader-client-ca-file the front-proxy settings are read
// from kube-system/extension-apiserver-authentication, as any extension API
// server does.
//
// Prometheus metrics (its requests to the apiserver, the subresource calls,
// the open console and VNC streams; docs/metrics.md) are served at /metrics
// on the TLS port, without authentication, as KubeVirt's virt-api serves
// them; --metrics-bind-address serves them over plain HTTP elsewhere
// instead, or (0) not at all.
package main

import (
	"context"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/virtkit/virtkit/controllers"
	"github.com/virtkit/virtkit/controllers/clientrate"
	"github.com/virtkit/virtkit/deploy"
	"github.com/virtkit/virtkit/deploy/certs/certfiles"
	"github.com/virtkit/virtkit/internal/scheme"
	"github.com/virtkit/virtkit/metrics"
	"github.com/virtkit/virtkit/virt/clusterconfig"
	"github.com/virtkit/virtkit/virtapi"
	"github.com/virtkit/virtkit/virtapi/frontproxy"
	"github.com/virtkit/virtkit/virtapi/nodeapi"
	"github.com/virtkit/virtkit/virtapi/subresources"
)

// config is everything the flags set.
type config struct {
	listen, certFile, keyFile       string
	frontProxyCAFile                string
	allowedNames, userHeaders       string
	groupHeaders, extraPrefixes     string
	handlerCAFile                   string
	handlerCertFile, handlerKeyFile string
	handlerServerName               string
	// handlerAddrs are --handler-address's node=URL pairs: handlers at
	// fixed addresses instead of found by their pods.
	handlerAddrs map[string]*url.URL
	privileged   string
	metricsAddr  string
	install      bool
	installOpts  installOptions
}

func main() {
	var c config
	// --kubeconfig is controller-runtime's flag (as in virt-controller):
	// that file, else $KUBECONFIG, the in-cluster service account, ~/.kube/config.
	flag.StringVar(&c.listen, "listen", ":8443", "address of the TLS port serving webhooks and the aggregated API")
	flag.StringVar(&c.certFile, "tls-cert-file", "", "serving certificate (PEM); it must name SERVICE.NAMESPACE.svc (required)")
	flag.StringVar(&c.keyFile, "tls-private-key-file", "", "serving key (PEM) (required)")
	flag.StringVar(&c.frontProxyCAFile, "requestheader-client-ca-file", "", "CA of the aggregator's client certificate; empty: read kube-system/extension-apiserver-authentication")
	flag.StringVar(&c.allowedNames, "requestheader-allowed-names", "", "comma-separated common names the aggregator's certificate may have; empty: any the CA signed")
	flag.StringVar(&c.userHeaders, "requestheader-username-headers", "X-Remote-User", "comma-separated user name headers")
	flag.StringVar(&c.groupHeaders, "requestheader-group-headers", "X-Remote-Group", "comma-separated group headers")
	flag.StringVar(&c.extraPrefixes, "requestheader-extra-headers-prefix", "X-Remote-Extra-", "comma-separated extra header prefixes")
	flag.StringVar(&c.handlerCAFile, "handler-ca-file", "", "CA that signed the node handlers' serving certificates (required)")
	flag.StringVar(&c.handlerCertFile, "handler-client-cert-file", "", "client certificate presented to node handlers, named "+nodeapi.ClientName+" (required)")
	flag.StringVar(&c.handlerKeyFile, "handler-client-key-file", "", "key of --handler-client-cert-file (required)")
	flag.StringVar(&c.handlerServerName, "handler-server-name", "", "name every handler's serving certificate must carry, whatever address is dialled; empty: "+nodeapi.ServerName("NAMESPACE")+" of --namespace")
	flag.Func("handler-address", "NODE=https://HOST:PORT: the node API of NODE's handler is there (repeat per node), for handlers that run outside pods, as virt-local's local nodes; with any, handlers are found only here, not by their pods", c.addHandlerAddress)
	flag.StringVar(&c.privileged, "privileged-users", "", "comma-separated users that may change a VMI's spec after creation; empty: the kubevirt-handler, kubevirt-controller and kubevirt-apiserver service accounts of --namespace")
	flag.StringVar(&c.metricsAddr, "metrics-bind-address", "", "address of /metrics over plain HTTP; empty: /metrics on --listen's TLS port, as KubeVirt; 0 turns it off")
	flag.BoolVar(&c.install, "install", false, "create or update the APIService, Service, webhook configurations and ClusterRoles, then serve")
	flag.StringVar(&c.installOpts.namespace, "namespace", "kubevirt", "namespace of virt-api's Service and of the KubeVirt CR it reads")
	flag.StringVar(&c.installOpts.service, "service-name", "virt-api", "name of virt-api's Service")
	flag.IntVar(&c.installOpts.port, "service-port", 443, "port of the Service the APIService and webhooks point at")
	flag.StringVar(&c.installOpts.externalName, "external-name", "", "with --install: make the Service type ExternalName to this host (e.g. localhost for a local control plane); empty: a ClusterIP Service selecting kubevirt.io=virt-api")
	flag.StringVar(&c.installOpts.caBundleFile, "ca-bundle-file", "", "with --install: CA (PEM) of the serving certificate for the APIService and webhooks; empty: --tls-cert-file")
	flag.Parse()

	log := logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, nil))
	logf.SetLogger(log)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, c, log); err != nil {
		log.Error(err, "virt-api failed")
		os.Exit(1)
	}
}

func run(ctx context.Context, c config, log logr.Logger) error {
	if c.certFile == "" || c.keyFile == "" {
		return errors.New("--tls-cert-file and --tls-private-key-file are required")
	}
	// The files are read again as they change: a renewed certificate
	// serves new connections without a restart.
	serving, err := certfiles.New(c.certFile, c.keyFile, "", certfiles.WithLogger(log.WithName("tls")))
	if err != nil {
		return fmt.Errorf("--tls-cert-file %s, --tls-private-key-file %s: %w", c.certFile, c.keyFile, err)
	}
	restCfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	// /metrics serves controller-runtime's registry: this process's
	// requests, and the subresource calls and open console and VNC streams.
	requests, err := metrics.NewClientRequests(ctrlmetrics.Registry)
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	restCfg = requests.Wrap("virt-api", restCfg)
	observer, err := metrics.NewSubresources(ctrlmetrics.Registry)
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	s := scheme.New()
	cl, err := client.New(restCfg, client.Options{Scheme: s})
	if err != nil {
		return fmt.Errorf("client for %s: %w", restCfg.Host, err)
	}
	if c.install {
		if err := install(ctx, cl, c, log); err != nil {
			return err
		}
	}
	// The client's rate is the CR's apiConfiguration, followed live (read
	// once the CRDs are surely there).
	restCfg, follow, err := clientrate.Setup(ctx, restCfg, c.installOpts.namespace, clusterconfig.ClientAPI, log.WithName("clientrate"))
	if err != nil {
		return err
	}
	go func() { _ = follow.Start(ctx) }()
	if cl, err = client.New(restCfg, client.Options{Scheme: s}); err != nil {
		return fmt.Errorf("client for %s: %w", restCfg.Host, err)
	}
	fp, err := frontProxy(ctx, cl, c)
	if err != nil {
		return err
	}
	handlerTLS, err := handlerTLSConfig(c, log)
	if err != nil {
		return err
	}
	privileged := splitList(c.privileged)
	if len(privileged) == 0 {
		privileged = deploy.PrivilegedUsers(c.installOpts.namespace)
	}

	// The webhooks default and validate with the cluster's settings, as the
	// VM controller does, read from the KubeVirt CR at each request so that
	// a change reaches them without a restart. One reading now refuses a
	// cluster with several CRs at start.
	base := controllers.Config{KubeVirtNamespace: c.installOpts.namespace}
	if _, err := controllers.ReadConfig(ctx, cl, base.KubeVirtNamespace, base); err != nil {
		return err
	}
	h := virtapi.Handler(cl, s, virtapi.Config{
		SpecOptionsFrom: controllers.LiveSpecOptions(cl, base),
		PrivilegedUsers: privileged,
		APIServer:       fp,
		Upload: &virtapi.Upload{
			Authenticator: fp,
			Key:           servingKey(serving),
			ClientTLS:     func() (*tls.Config, error) { return handlerTLS, nil },
		},
		Subresources: []subresources.Option{
			subresources.WithAuthenticator(fp),
			subresources.WithLocator(c.locator(cl, handlerTLS)),
			subresources.WithLogger(log.WithName("subresources")),
			subresources.WithObserver(observer),
		},
	})
	errc := make(chan error, 2)
	servers := []*http.Server{}
	switch c.metricsAddr {
	case "":
		mux := http.NewServeMux()
		mux.Handle("/metrics", metrics.Handler(ctrlmetrics.Registry))
		mux.Handle("/", h)
		h = mux
	case "0":
	default:
		ln, err := net.Listen("tcp", c.metricsAddr)
		if err != nil {
			return fmt.Errorf("--metrics-bind-address: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", metrics.Handler(ctrlmetrics.Registry))
		msrv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		servers = append(servers, msrv)
		go func() { errc <- fmt.Errorf("serving /metrics on %s: %w", c.metricsAddr, msrv.Serve(ln)) }()
		log.Info("serving /metrics", "address", ln.Addr().String())
	}
	srv := &http.Server{
		Addr:              c.listen,
		Handler:           h,
		TLSConfig:         virtapi.TLSConfigFrom(serving.GetCertificate),
		ReadHeaderTimeout: 10 * time.Second,
	}
	servers = append(servers, srv)
	go func() { errc <- fmt.Errorf("serving on %s: %w", c.listen, srv.ListenAndServeTLS("", "")) }()
	log.Info("serving", "address", c.listen, "apiserver", restCfg.Host)
	var serveErr error
	select {
	case serveErr = <-errc:
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var errs []error
	for _, server := range servers {
		errs = append(errs, server.Shutdown(shutdown))
	}
	return errors.Join(append([]error{serveErr}, errs...)...)
}

// servingKey is the key of the serving certificate of the moment, which
// signs upload tokens: every replica has it, so a token one issues the
// others accept.
func servingKey(serving *certfiles.Source) func() (crypto.Signer, error) {
	return func() (crypto.Signer, error) {
		cert, err := serving.GetCertificate(nil)
		if err != nil {
			return nil, err
		}
		key, ok := cert.PrivateKey.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("the serving key, a %T, cannot sign", cert.PrivateKey)
		}
		return key, nil
	}
}

// frontProxy builds the authenticator from the flags, or from the cluster.
func frontProxy(ctx context.Context, cl client.Client, c config) (*frontproxy.Authenticator, error) {
	if c.frontProxyCAFile == "" {
		fp, err := subresources.FrontProxyFromCluster(ctx, cl)
		if err != nil {
			return nil, fmt.Errorf("no --requestheader-client-ca-file, and the cluster's front-proxy settings: %w", err)
		}
		return fp, nil
	}
	pool, err := readPool(c.frontProxyCAFile)
	if err != nil {
		return nil, fmt.Errorf("--requestheader-client-ca-file: %w", err)
	}
	return &frontproxy.Authenticator{ClientCA: pool, AllowedNames: splitList(c.allowedNames),
		UsernameHeaders: splitList(c.userHeaders), GroupHeaders: splitList(c.groupHeaders),
		ExtraHeaderPrefixes: splitList(c.extraPrefixes)}, nil
}

// addHandlerAddress parses one --handler-address, NODE=https://HOST:PORT.
func (c *config) addHandlerAddress(v string) error {
	node, raw, ok := strings.Cut(v, "=")
	if !ok || node == "" {
		return fmt.Errorf("%q: want NODE=https://HOST:PORT", v)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("node %s: %w", node, err)
	}
	if u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("node %s: %q: the node API speaks https only, at https://HOST:PORT", node, raw)
	}
	if c.handlerAddrs == nil {
		c.handlerAddrs = map[string]*url.URL{}
	}
	if _, dup := c.handlerAddrs[node]; dup {
		return fmt.Errorf("node %s: named twice", node)
	}
	c.handlerAddrs[node] = u
	return nil
}

// locator finds a node's handler: at its --handler-address if any were
// given, else by its pod in virtkit's namespace, not by an address on its
// Node, which any node could rewrite.
func (c config) locator(cl client.Reader, tc *tls.Config) nodeapi.Locator {
	if len(c.handlerAddrs) == 0 {
		return nodeapi.NewPodLocator(cl, c.installOpts.namespace, tc)
	}
	l := nodeapi.StaticLocator{}
	for node, u := range c.handlerAddrs {
		l[node] = nodeapi.Endpoint{URL: u, TLS: tc}
	}
	return l
}

// handlerTLSConfig is the client TLS virt-api presents to node handlers:
// its client certificate, and the handler's checked against
// --handler-ca-file for --handler-server-name (a handler is dialled at its
// pod's address, which no shared certificate names). The files are read
// again as they change, so a renewal reaches new connections.
func handlerTLSConfig(c config, log logr.Logger) (*tls.Config, error) {
	if c.handlerCAFile == "" || c.handlerCertFile == "" || c.handlerKeyFile == "" {
		return nil, errors.New("the node API speaks mutual TLS only: --handler-ca-file, --handler-client-cert-file and --handler-client-key-file are required")
	}
	name := c.handlerServerName
	if name == "" {
		name = nodeapi.ServerName(c.installOpts.namespace)
	}
	src, err := certfiles.New(c.handlerCertFile, c.handlerKeyFile, c.handlerCAFile, certfiles.WithLogger(log.WithName("handler-tls")))
	if err != nil {
		return nil, fmt.Errorf("--handler-client-cert-file, --handler-client-key-file, --handler-ca-file: %w", err)
	}
	return src.ClientConfig(name)
}

func readPool(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%s: no PEM certificate", path)
	}
	return pool, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
