// Command virt-handler is virtkit's per-node agent: it runs
// controllers/handler in a controller-runtime manager, connected to each
// launcher's libvirt with virt/domain/libvirt (the only cgo), and serves the
// node API (nodeapi) that virt-api calls for pause, unpause, soft reboot,
// console and VNC. It serves Prometheus metrics over plain HTTP on
// --metrics-bind-address (default :8188, next to the node API's :8186 and
// the probes' :8187) at /metrics:
// reconcile counts and latencies, workqueue depth, its requests to the
// apiserver, and each running guest's CPU, memory, disk and network
// counters, read from libvirt at scrape time (docs/metrics.md).
//
//	virt-handler --node-name $(NODE_NAME) --emulation \
//	    --node-api-address :8186 --advertise-address https://$(NODE_IP):8186 \
//	    --tls-cert-file /etc/virt-handler/tls.crt --tls-key-file /etc/virt-handler/tls.key \
//	    --client-ca-file /etc/virt-handler/virt-api-ca.crt \
//	    --migration-advertise-host $(NODE_IP) --migration-ca-file /etc/virt-handler/migration-ca/ca-bundle \
//	    --migration-cert-signer kubevirt.io/virt-handler-migration
//
// Migrations to the node arrive on --migration-address (default :8185),
// over mutual TLS with the node's migration certificate
// (--migration-cert-file, --migration-key-file, --migration-ca-file), from
// the source nodes' handlers; --local-migration instead reaches the target
// launchers of other nodes on this machine through their pods folders
// (docs/migration.md, "Migration traffic"). A pod on KubeVirt's dedicated
// migration network has interface migration0 (--migration-interface);
// migrations then come to that interface's address only.
//
// It needs root on the node: it enters launcher pods' network namespaces
// and writes into their file systems. docs/controllers/handler.md describes
// what it does and the folders it shares with launcher pods.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	virtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/virtkit/virtkit/controllers/clientrate"
	"github.com/virtkit/virtkit/controllers/handler"
	"github.com/virtkit/virtkit/deploy/certs"
	"github.com/virtkit/virtkit/deploy/certs/certfiles"
	"github.com/virtkit/virtkit/deploy/certs/certrequest"
	"github.com/virtkit/virtkit/internal/scheme"
	"github.com/virtkit/virtkit/metrics"
	"github.com/virtkit/virtkit/virt/clusterconfig"
	"github.com/virtkit/virtkit/virt/devices"
	"github.com/virtkit/virtkit/virt/domain"
	domainlibvirt "github.com/virtkit/virtkit/virt/domain/libvirt"
	"github.com/virtkit/virtkit/virtapi/nodeapi"
)

// options are the daemon's flags.
type options struct {
	cfg       handler.Config
	apiAddr   string
	advertise string
	certFile  string
	keyFile   string
	clientCA  string
	// clientNames are the common names a client certificate may have.
	clientNames string
	// insecure serves the node API in plain HTTP, for tests only.
	insecure bool
	metrics  string
	probes   string
	// devicePlugins is the kubelet's device plugin folder; "0" serves none.
	devicePlugins string
	// labellerDir holds the launcher's host CPU probe; "" labels no CPU.
	labellerDir string
	// peerPods are --peer-pods-dir's NODE=DIR pairs: the pods folders of
	// the other nodes on this machine, where migrations to them go with
	// --local-migration.
	peerPods map[string]string
	// localMigration dials targets' sockets in peerPods instead of their
	// handlers' migration ports.
	localMigration bool
	// migrationAddr is the listen address of migrations to this node;
	// migrationHost is the host sources reach it at.
	migrationAddr, migrationHost string
	// migrationIface is the dedicated migration network's interface, whose
	// address, when the pod has it, replaces both hosts.
	migrationIface string
	// The node's migration certificate and the CA of its peers'.
	migrationCert, migrationKey, migrationCA string
	// migrationSigner, instead of the certificate's files, asks this
	// signer for it through the CertificateSigningRequest API.
	migrationSigner string
	heartbeat       time.Duration
	verbose         bool
}

func main() {
	var o options
	flag.StringVar(&o.cfg.NodeName, "node-name", os.Getenv("NODE_NAME"), "the node this handler runs on (default $NODE_NAME)")
	flag.StringVar(&o.cfg.PodsDir, "pods-dir", handler.DefaultPodsDir, "the kubelet's pods folder on the node, where each launcher pod's folder is its emptyDir")
	flag.Func("peer-pods-dir", "NODE=DIR: the pods folder of NODE, another node on this machine (repeat per node), for --local-migration", o.addPeerPods)
	flag.BoolVar(&o.localMigration, "local-migration", false, "migrate only to nodes of this machine (--peer-pods-dir), connecting the target launcher's sockets directly instead of its handler's migration port")
	flag.StringVar(&o.migrationAddr, "migration-address", ":"+strconv.Itoa(handler.DefaultMigrationPort), "listen address of migrations to this node, from other nodes' handlers; 0 turns it off")
	flag.StringVar(&o.migrationHost, "migration-advertise-host", "", "host (name or IP) other nodes' handlers reach --migration-address's port at (default: --migration-address's host, when it names one)")
	flag.StringVar(&o.migrationIface, "migration-interface", virtv1.MigrationInterfaceName, "interface of the dedicated migration network (KubeVirt's migrations.network, which virt-operator joins the handler's pod to): when the handler has it, migrations to this node come to its address instead of --migration-advertise-host's; empty: never")
	flag.StringVar(&o.migrationCert, "migration-cert-file", "", "this node's migration certificate, named NODE"+certs.NodeName("")+" (serving and client)")
	flag.StringVar(&o.migrationKey, "migration-key-file", "", "key of --migration-cert-file")
	flag.StringVar(&o.migrationCA, "migration-ca-file", "", "CA bundle other nodes' migration certificates are checked with")
	flag.StringVar(&o.migrationSigner, "migration-cert-signer", "", "instead of --migration-cert-file, ask this signer ("+certs.NodeSigner+", which virt-operator runs) for the node's migration certificate through the CertificateSigningRequest API, keeping it in --state-dir")
	flag.StringVar(&o.cfg.PodRunDir, "pod-run-dir", handler.DefaultPodRunDir, "where launcher pods see the same folders")
	flag.StringVar(&o.cfg.StateDir, "state-dir", handler.DefaultStateDir, "node folder for the handler's own records (not shared with pods)")
	flag.BoolVar(&o.cfg.Emulation, "emulation", false, "run every guest under software emulation (TCG), whatever the KubeVirt CR says, and offer no devices.kubevirt.io/kvm: for a node whose KVM must not be used; without it the CR's useEmulation decides at each start")
	flag.StringVar(&o.cfg.KubeVirtNamespace, "namespace", "kubevirt", "namespace of the KubeVirt CR, whose useEmulation the handler reads at each guest's start")
	flag.StringVar(&o.apiAddr, "node-api-address", ":8186", "listen address of the node API for virt-api; 0 turns it off")
	flag.StringVar(&o.advertise, "advertise-address", "", "URL virt-api reaches the node API at, published on the Node as "+nodeapi.HandlerAddressAnnotation+" (empty: not published)")
	flag.StringVar(&o.certFile, "tls-cert-file", "", "serving certificate of the node API; it must name "+nodeapi.ServerName("NAMESPACE")+" (required)")
	flag.StringVar(&o.keyFile, "tls-key-file", "", "key of --tls-cert-file (required)")
	flag.StringVar(&o.clientCA, "client-ca-file", "", "CA of the client certificates the node API requires (virt-api's) (required)")
	flag.StringVar(&o.clientNames, "client-names", nodeapi.ClientName, "comma-separated common names a client certificate may have")
	flag.BoolVar(&o.insecure, "insecure-node-api", false, "FOR TESTS ONLY: serve the node API in plain HTTP, to anyone who reaches its port, without the TLS flags")
	flag.StringVar(&o.metrics, "metrics-bind-address", ":8188", "address of /metrics (plain HTTP); 0 turns it off")
	flag.StringVar(&o.probes, "health-probe-bind-address", ":8187", "address of /healthz and /readyz; 0 turns it off")
	flag.StringVar(&o.devicePlugins, "device-plugin-dir", pluginapi.DevicePluginPath, "the kubelet's device plugin folder, where the handler serves devices.kubevirt.io/kvm (unless --emulation or no /dev/kvm), tun and vhost-net; 0 serves none")
	flag.StringVar(&o.labellerDir, "node-labeller-dir", "", "folder where virt-launcher --probe-host-cpu wrote what a guest's CPU can be on this node; the node is labelled from it (empty: no CPU labels)")
	flag.DurationVar(&o.heartbeat, "heartbeat-interval", handler.DefaultHeartbeatInterval, "how often the handler marks its Node (kubevirt.io/heartbeat), by which virt-controller tells it is alive")
	flag.BoolVar(&o.verbose, "v", false, "debug logging")
	flag.Parse()
	level := slog.LevelInfo
	if o.verbose {
		level = slog.LevelDebug
	}
	log := logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	ctrl.SetLogger(log)
	if err := run(ctrl.SetupSignalHandler(), o, log); err != nil {
		log.Error(err, "virt-handler failed")
		os.Exit(1)
	}
}

func run(ctx context.Context, o options, log logr.Logger) error {
	if o.cfg.NodeName == "" {
		return errors.New("--node-name (or $NODE_NAME) is required")
	}
	// The node API's flags are checked before anything starts.
	var clientNames []string
	if o.apiAddr != "0" {
		names, err := nodeAPIFlags(o)
		if err != nil {
			return err
		}
		clientNames = names
	}
	restCfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	// /metrics serves controller-runtime's registry: the reconcile and
	// workqueue series, this process's requests and its guests' counters.
	requests, err := metrics.NewClientRequests(ctrlmetrics.Registry)
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	restCfg = requests.Wrap("virt-handler", restCfg)
	// The client's rate is the CR's handlerConfiguration, followed live.
	restCfg, follow, err := clientrate.Setup(ctx, restCfg, o.cfg.KubeVirtNamespace, clusterconfig.ClientHandler, log.WithName("clientrate"))
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(restCfg, ctrl.Options{
		Scheme:                 scheme.New(),
		Cache:                  handler.CacheOptions(o.cfg.NodeName),
		Metrics:                metricsserver.Options{BindAddress: o.metrics},
		HealthProbeBindAddress: o.probes,
	})
	if err != nil {
		return fmt.Errorf("manager: %w", err)
	}
	mig, err := migrationFlags(o, log)
	if err != nil {
		return err
	}
	if o.migrationSigner != "" {
		cs, err := kubernetes.NewForConfig(restCfg)
		if err != nil {
			return err
		}
		cfg := certrequest.NodeConfig(o.cfg.NodeName, filepath.Join(o.cfg.StateDir, "migration-tls"), o.migrationCA)
		cfg.SignerName = o.migrationSigner
		req, err := certrequest.New(cfg, cs.CertificatesV1().CertificateSigningRequests(), certrequest.WithLogger(log.WithName("migration-certificate")))
		if err != nil {
			return err
		}
		if err := mgr.Add(manager.RunnableFunc(req.Run)); err != nil {
			return err
		}
		mig.certs = req
	}
	o.cfg.MigrationAddress = mig.advertise
	starts, err := metrics.NewStartStages(ctrlmetrics.Registry)
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	r, err := handler.New(o.cfg,
		handler.WithConnector(func(ctx context.Context, uri string) (domain.Manager, error) {
			return domainlibvirt.New(ctx, uri, domainlibvirt.WithLogger(log.WithName("libvirt")))
		}),
		handler.WithLogger(log.WithName("handler")),
		handler.WithMigrationDialer(mig.dialer()),
		handler.WithStartObserver(starts),
	)
	if err != nil {
		return err
	}
	if err := r.SetupWithManager(mgr); err != nil {
		return err
	}
	if mig.listen != "" {
		serve := func(ctx context.Context) error {
			ln, err := net.Listen("tcp", mig.listen)
			if err != nil {
				return fmt.Errorf("--migration-address: %w", err)
			}
			return r.ServeMigrations(ctx, ln, mig.certs)
		}
		if err := mgr.Add(manager.RunnableFunc(serve)); err != nil {
			return err
		}
	}
	if err := ctrlmetrics.Registry.Register(metrics.NewDomainStats([]metrics.GuestLister{r}, metrics.WithLogger(log.WithName("metrics")))); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	if o.apiAddr != "0" {
		srv, err := nodeAPIServer(o, clientNames, r, log)
		if err != nil {
			return err
		}
		if err := mgr.Add(serve(srv, o.apiAddr, mgr.GetClient(), o.cfg.NodeName, o.advertise, log)); err != nil {
			return err
		}
	}
	if o.labellerDir != "" {
		// Labelled first: a node that launchers may be placed on carries its
		// CPU labels already.
		// The handler caches no Nodes: the labeller reads its own uncached.
		direct, err := client.New(restCfg, client.Options{Scheme: scheme.New()})
		if err != nil {
			return err
		}
		labeller := handler.NodeLabeller{Client: direct, Node: o.cfg.NodeName, Dir: o.labellerDir, Log: log.WithName("node-labeller")}
		if err := labeller.Start(ctx); err != nil {
			return err
		}
	}
	if err := mgr.Add(follow); err != nil {
		return err
	}
	if err := mgr.Add(handler.Heartbeat{Client: mgr.GetClient(), Node: o.cfg.NodeName, Interval: o.heartbeat, Log: log.WithName("heartbeat")}); err != nil {
		return err
	}
	if o.devicePlugins != "0" {
		for _, d := range devices.ForNode(devices.HostFacts(o.cfg.Emulation)) {
			p := devices.NewPlugin(d, devices.WithDir(o.devicePlugins), devices.WithLogger(log.WithName("devices")))
			run := func(ctx context.Context) error {
				if err := p.Run(ctx); !errors.Is(err, context.Canceled) {
					return err
				}
				return nil // the manager is stopping
			}
			if err := mgr.Add(manager.RunnableFunc(run)); err != nil {
				return err
			}
		}
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// nodeAPIServer is the node API over the handler, behind mutual TLS: its
// certificate, and client certificates of --client-ca-file named one of
// --client-names (virt-api's). Anyone who reaches the port could otherwise
// pause a guest or read its console, so without the flags it refuses to
// start, unless --insecure-node-api says this is a test. names are the
// client names nodeAPIFlags returned.
func nodeAPIServer(o options, names []string, ops nodeapi.Ops, log logr.Logger) (*http.Server, error) {
	srv := &http.Server{
		Handler:           nodeapi.NewServer(ops, nodeapi.WithServerLogger(log.WithName("node-api"))),
		ReadHeaderTimeout: 10 * time.Second,
	}
	if o.insecure {
		log.Info("INSECURE: the node API speaks plain HTTP to anyone who reaches its port (--insecure-node-api, for tests only)")
		return srv, nil
	}
	// The files are read again as they change: a renewed certificate or
	// CA bundle reaches new connections without a restart.
	src, err := certfiles.New(o.certFile, o.keyFile, o.clientCA, certfiles.WithLogger(log.WithName("tls")))
	if err != nil {
		return nil, fmt.Errorf("--tls-cert-file, --tls-key-file, --client-ca-file: %w", err)
	}
	srv.TLSConfig = src.ServerConfig(names...)
	return srv, nil
}

// nodeAPIFlags checks the node API's TLS flags and returns the client
// names, before anything starts.
func nodeAPIFlags(o options) ([]string, error) {
	if o.insecure {
		if o.certFile != "" || o.clientCA != "" {
			return nil, errors.New("--insecure-node-api goes without --tls-cert-file and --client-ca-file")
		}
		return nil, nil
	}
	if o.certFile == "" || o.keyFile == "" || o.clientCA == "" {
		return nil, errors.New("the node API speaks mutual TLS only: --tls-cert-file, --tls-key-file and --client-ca-file are required (--insecure-node-api serves plain HTTP, for tests only)")
	}
	names := strings.FieldsFunc(o.clientNames, func(r rune) bool { return r == ',' || r == ' ' })
	if len(names) == 0 {
		return nil, errors.New("--client-names: at least one name is required")
	}
	return names, nil
}

// serve runs the node API while the manager runs and, once it listens,
// publishes advertise on the Node, for people and tools to read (virt-api
// finds a handler by its pod, not by this annotation, which any node's
// credentials could rewrite).
func serve(srv *http.Server, addr string, c client.Client, node, advertise string, log logr.Logger) manager.RunnableFunc {
	return func(ctx context.Context) error {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("node API: %w", err)
		}
		errc := make(chan error, 1)
		go func() {
			if srv.TLSConfig != nil {
				errc <- srv.ServeTLS(ln, "", "")
			} else {
				errc <- srv.Serve(ln)
			}
		}()
		log.Info("node API listening", "address", ln.Addr().String())
		if advertise != "" {
			if err := nodeapi.Publish(ctx, c, node, advertise); err != nil {
				log.Error(err, "publishing the node API address")
			}
		}
		select {
		case err := <-errc:
			return fmt.Errorf("node API: %w", err)
		case <-ctx.Done():
			shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return srv.Shutdown(shutCtx)
		}
	}
}

// migrations is how this handler migrates guests, from its flags.
type migrations struct {
	// local is the same-machine dialer of --local-migration; without it
	// the handler dials its peers over TCP with certs.
	local handler.MigrationDialer
	// listen is where migrations to this node come ("": nowhere), and
	// advertise what sources dial (Config.MigrationAddress).
	listen, advertise string
	certs             handler.MigrationCertificates
}

// dialer is how this handler reaches the target of a migration.
func (m migrations) dialer() handler.MigrationDialer {
	if m.local != nil {
		return m.local
	}
	return handler.TCPMigrationDialer{Certificates: m.certs}
}

// migrationFlags checks the migration flags: --local-migration, or the
// handler-to-handler path over TCP with this node's certificate.
func migrationFlags(o options, log logr.Logger) (migrations, error) {
	if o.localMigration {
		return migrations{local: handler.LocalMigrationDialer{PodsDirs: o.podsDirs()}}, nil
	}
	if len(o.peerPods) > 0 {
		return migrations{}, errors.New("--peer-pods-dir goes with --local-migration")
	}
	var m migrations
	switch set := []bool{o.migrationCert != "", o.migrationKey != "", o.migrationCA != ""}; {
	case o.migrationSigner != "":
		if set[0] || set[1] || !set[2] {
			return m, errors.New("--migration-cert-signer goes with --migration-ca-file, without --migration-cert-file and --migration-key-file")
		}
		// The certificate comes from the signer once the manager runs.
	case set[0] && set[1] && set[2]:
		src, err := certfiles.New(o.migrationCert, o.migrationKey, o.migrationCA, certfiles.WithLogger(log.WithName("migration-tls")))
		if err != nil {
			return m, fmt.Errorf("--migration-cert-file, --migration-key-file, --migration-ca-file: %w", err)
		}
		m.certs = src
	case set[0] || set[1] || set[2]:
		return m, errors.New("--migration-cert-file, --migration-key-file and --migration-ca-file go together")
	default:
		log.Info("no migration certificate (--migration-cert-file): only migrations whose configuration sets migrations.disableTLS can leave or reach this node")
	}
	if o.migrationAddr == "0" {
		return m, nil
	}
	host, port, err := net.SplitHostPort(o.migrationAddr)
	if err != nil {
		return m, fmt.Errorf("--migration-address %q: %w", o.migrationAddr, err)
	}
	m.listen = o.migrationAddr
	if o.migrationHost != "" {
		host = o.migrationHost
	}
	if o.migrationIface != "" {
		// KubeVirt's dedicated migration network: migrations come only
		// there, to the address the pod has on it.
		ip, ok, err := handler.MigrationNetworkAddress(o.migrationIface)
		if err != nil {
			return m, fmt.Errorf("--migration-interface: %w", err)
		}
		if ok {
			host = ip.String()
			m.listen = net.JoinHostPort(host, port)
			log.Info("migrations come over the dedicated migration network", "interface", o.migrationIface, "address", host)
		}
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		return m, fmt.Errorf("--migration-advertise-host: required when --migration-address %q names no host that other nodes can reach", o.migrationAddr)
	}
	m.advertise = net.JoinHostPort(host, port)
	return m, nil
}

// addPeerPods parses one --peer-pods-dir, NODE=DIR.
func (o *options) addPeerPods(v string) error {
	node, dir, ok := strings.Cut(v, "=")
	if !ok || node == "" || !filepath.IsAbs(dir) {
		return fmt.Errorf("%q: want NODE=DIR, DIR absolute", v)
	}
	if o.peerPods == nil {
		o.peerPods = map[string]string{}
	}
	if _, dup := o.peerPods[node]; dup {
		return fmt.Errorf("node %s: named twice", node)
	}
	o.peerPods[node] = dir
	return nil
}

// podsDirs are the pods folders of the nodes on this machine: this node's
// and its peers'.
func (o options) podsDirs() map[string]string {
	dirs := map[string]string{o.cfg.NodeName: o.cfg.PodsDir}
	for node, dir := range o.peerPods {
		if node != o.cfg.NodeName {
			dirs[node] = dir
		}
	}
	return dirs
}
