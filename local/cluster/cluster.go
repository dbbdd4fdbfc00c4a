package cluster

import (
	"context"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	virtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	ctrlmanager "sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/virtkit/virtkit/controllers"
	"github.com/virtkit/virtkit/controllers/export"
	"github.com/virtkit/virtkit/controllers/handler"
	"github.com/virtkit/virtkit/deploy"
	"github.com/virtkit/virtkit/deploy/certs/certfiles"
	"github.com/virtkit/virtkit/internal/scheme"
	"github.com/virtkit/virtkit/local/controlplane"
	"github.com/virtkit/virtkit/local/csidriver"
	"github.com/virtkit/virtkit/local/hollow"
	"github.com/virtkit/virtkit/local/kubelet"
	"github.com/virtkit/virtkit/local/node"
	"github.com/virtkit/virtkit/local/registry"
	"github.com/virtkit/virtkit/metrics"
	"github.com/virtkit/virtkit/virt/clusterconfig"
	"github.com/virtkit/virtkit/virtapi"
	"github.com/virtkit/virtkit/virtapi/exportapi"
	"github.com/virtkit/virtkit/virtapi/frontproxy"
	"github.com/virtkit/virtkit/virtapi/nodeapi"
	"github.com/virtkit/virtkit/virtapi/subresources"
)

// Namespace is where virt-local keeps the KubeVirt CR and virt-api's Service.
const Namespace = "kubevirt"

// Cluster is a running local cluster.
type Cluster struct {
	cfg  Config
	reg  *registry.Registry
	cp   *controlplane.ControlPlane
	rest *rest.Config
	// components is the in-process components' client configuration
	// (ComponentsUser), the administrator's being rest.
	components *rest.Config
	api        *http.Server
	// exportProxy serves exports' external links (ExportProxyPort).
	exportProxy *http.Server
	ctrl        *manager
	storage     *storage
	nodes       []*localNode
	real        *kubelet.Node
	// split runs the daemons as processes (Config.Split); nil otherwise.
	split *daemons
	// base is the controllers' settings before the KubeVirt CR, which they
	// read again for each VMI and pod; config is base with the CR as it was
	// at start, for the handlers and virt-api.
	base, config controllers.Config
	// kv is the KubeVirt CR as it was at start, whose client rates the
	// in-process components take (clientConfig).
	kv *virtv1.KubeVirt

	metrics     *prometheus.Registry
	requests    *metrics.ClientRequests
	apiMetrics  *metrics.Subresources
	startStages *metrics.StartStages // every in-process handler's
	metricsSrv  *http.Server
	metricsAddr string
}

// localNode is one node and its handler.
type localNode struct {
	name string
	// hollow makes the node hollow (Config.HollowNodes); nil for a local
	// node, which has a network.
	hollow  *hollow.Node
	network NodeNetwork
	node    *node.Node
	handler *handler.Reconciler
	mgr     *manager
	// api serves the handler's node API to virt-api, at apiURL.
	api    *http.Server
	apiURL *url.URL
}

// Up starts (or restarts, on an existing data directory) a local cluster
// and returns once every node is registered and every component runs. On
// failure, what it started is stopped again.
func Up(ctx context.Context, cfg Config) (_ *Cluster, err error) {
	cfg, err = cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	log := cfg.Logger
	c := &Cluster{cfg: cfg}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.Down(context.Background()))
		}
	}()

	// First: a taken port fails fast, and the nodes pull from it.
	log.Info("starting the registry", "address", cfg.RegistryAddr, "images", cfg.RegistryDir())
	if err := c.startRegistry(ctx); err != nil {
		return c, err
	}
	// The process nodes' launchers share one capability cache, filled
	// while the control plane starts.
	warmed := func(bool) {}
	if !cfg.Operator {
		if err := prepareCapabilitiesCache(cfg.CapabilitiesCacheDir()); err != nil {
			return c, err
		}
		if len(cfg.Nodes) > 0 {
			warmed = c.warmCapabilities(ctx)
			defer warmed(true) // on an early return: stopped, and waited for
		}
	}
	log.Info("starting the control plane", "data", cfg.DataDir)
	c.cp, err = controlplane.Start(ctx, controlplane.Config{
		DataDir: cfg.controlPlaneDir(), BinDir: cfg.BinDir,
		APIServerPort: cfg.APIServerPort, EtcdPort: cfg.EtcdPort, Logger: log.WithName("controlplane"),
		APIServerFlags: cfg.apiServerFlags(), WebhookClientHosts: cfg.webhookClientHosts(),
	})
	if err != nil {
		return c, err
	}
	if c.rest, err = c.cp.RESTConfig(); err != nil {
		return c, err
	}
	if c.components, err = componentsConfig(c.rest, c.cp.Config(), cfg.componentsKubeconfig()); err != nil {
		return c, err
	}
	if err := c.startMetrics(); err != nil {
		return c, fmt.Errorf("cluster: metrics: %w", err)
	}
	s := scheme.New()
	cl, err := client.New(c.clientConfig(ComponentInstall), client.Options{Scheme: s})
	if err != nil {
		return c, fmt.Errorf("cluster: client: %w", err)
	}
	if cfg.Operator {
		return c, c.upForOperator(ctx, cl)
	}
	log.Info("installing CRDs, the KubeVirt CR and virt-api's registration")
	if err := install(ctx, cl, cfg, c.cp.Config().PKI()); err != nil {
		return c, err
	}
	// Upload pods trust virt-api's client certificate, which the
	// cluster's CA signs.
	uploadCA, err := os.ReadFile(c.cp.Config().PKI().CACert())
	if err != nil {
		return c, fmt.Errorf("cluster: %w", err)
	}
	exportCA, err := c.cp.Config().PKI().ExportCA()
	if err != nil {
		return c, fmt.Errorf("cluster: %w", err)
	}
	c.base = controllers.Config{LauncherImage: cfg.LauncherImage, ImporterImage: cfg.ImporterImage, KubeVirtNamespace: Namespace, NodeHealth: cfg.NodeHealth,
		// One probe of QEMU's capabilities for all launchers, not one each.
		LauncherCapabilitiesCache: cfg.CapabilitiesCacheDir(),
		UploadClientCA:            uploadCA, UploadClientName: nodeapi.ClientName,
		UploadProxyURL: cfg.UploadProxyURL(),
		// Export servers' certificates come from the export CA; the
		// export proxy reaches them from its loopback port, with
		// virt-api's certificate, which the cluster CA (uploadCA) signed.
		ExportServerImage: cfg.ExportServerImage, ExportSigner: export.CASigner{CA: exportCA},
		ExportProxyHost: cfg.ExportProxyHost(), ExportProxyCA: uploadCA}
	c.config, err = controllers.ReadConfig(ctx, cl, Namespace, c.base)
	if err != nil {
		return c, err
	}
	if c.kv, err = clusterconfig.Get(ctx, cl, Namespace); err != nil {
		return c, fmt.Errorf("cluster: %w", err)
	}
	log.Info("starting the CSI driver and the storage components", "class", StorageClassName, "snapshotClass", VolumeSnapshotClassName, "folders", cfg.CSIDir(), "logs", cfg.DaemonLogDir())
	if c.storage, err = c.startStorage(ctx, cl); err != nil {
		return c, err
	}

	if cfg.Split {
		c.split = newDaemons()
	}
	// The nodes attach secondary networks as Multus does.
	if err := installMultusCRD(ctx, cl); err != nil {
		return c, err
	}
	nets := newNetworks(cfg.DataDir)
	warmed(false)
	for i, name := range cfg.Nodes {
		ln, err := c.startNode(ctx, name, i, nets)
		if ln != nil {
			c.nodes = append(c.nodes, ln)
		}
		if err != nil {
			return c, err
		}
	}
	for _, name := range cfg.HollowNodes {
		ln, err := c.startHollowNode(ctx, name)
		if ln != nil {
			c.nodes = append(c.nodes, ln)
		}
		if err != nil {
			return c, err
		}
	}
	if err := c.addGuestMetrics(); err != nil {
		return c, err
	}
	if cfg.KubeletNode != "" {
		// The daemons run as pods of the real node, from the built images,
		// as a cluster operator runs them.
		if c.real, err = c.startKubeletNode(ctx, nets); err != nil {
			return c, err
		}
		if err := c.deployDaemons(ctx, cl); err != nil {
			return c, err
		}
		if err := c.serveMetrics(); err != nil {
			return c, err
		}
		log.Info("up", "kubeconfig", c.Kubeconfig(), "registry", c.Registry(), "metrics", c.MetricsAddr(), "nodes", cfg.Nodes, "kubeletNode", cfg.KubeletNode)
		return c, nil
	}
	if c.split != nil {
		log.Info("starting virt-api, virt-exportproxy and virt-controller as processes", "logs", cfg.DaemonLogDir())
		if err := c.startAPIProcess(ctx); err != nil {
			return c, err
		}
		if err := c.startControllerProcess(); err != nil {
			return c, err
		}
		if err := c.serveMetrics(); err != nil {
			return c, err
		}
		log.Info("up", "kubeconfig", c.Kubeconfig(), "registry", c.Registry(), "metrics", c.MetricsAddr(), "nodes", cfg.Nodes, "split", true)
		return c, nil
	}
	if err := c.serveVirtAPI(ctx); err != nil {
		return c, err
	}
	log.Info("starting the VM and VMI controllers")
	c.ctrl, err = startManager(ComponentController, c.clientConfig(ComponentController), ctrl.Options{},
		func(mgr ctrl.Manager) error {
			// Online snapshots freeze guests through virt-api's freeze verb.
			base := c.base
			freezer, err := subresources.NewClient(mgr.GetConfig())
			if err != nil {
				return err
			}
			base.Freezer = freezer
			if err := controllers.AddToManager(mgr, base); err != nil {
				return err
			}
			return controllers.AddMetrics(mgr, c.metrics, metrics.WithLogger(log.WithName("metrics")))
		})
	if err != nil {
		return c, fmt.Errorf("cluster: controllers: %w", err)
	}
	if err := c.serveMetrics(); err != nil {
		return c, err
	}
	// As with the daemons as processes or pods: the first console or
	// start call must not meet a 503 while the aggregator looks.
	if err := waitAPIService(ctx, cl); err != nil {
		return c, err
	}
	log.Info("up", "kubeconfig", c.Kubeconfig(), "registry", c.Registry(), "metrics", c.MetricsAddr(), "nodes", cfg.Nodes, "kubeletNode", cfg.KubeletNode)
	return c, nil
}

// startNode starts one local node, the index-th, and its handler. The
// node's bridge and pod range come from nets (see networks.assign).
func (c *Cluster) startNode(ctx context.Context, name string, index int, nets *networks) (*localNode, error) {
	ln := &localNode{name: name}
	var err error
	if ln.network, err = nets.assign(name, index); err != nil {
		return nil, err
	}
	if err := c.runNode(ctx, ln); err != nil {
		return nil, errors.Join(err, removeHostBridge(ln.network.Bridge))
	}
	if c.split != nil {
		c.cfg.Logger.Info("starting the handler as a process", "node", name, "log", filepath.Join(c.cfg.DaemonLogDir(), HandlerDaemon(name)+".log"))
		return ln, c.startHandlerProcess(ctx, ln)
	}
	return ln, c.runHandler(ctx, ln)
}

// runNode starts ln's local node on its bridge and pod range; a node
// started again on its state folder cleans up after its earlier run.
func (c *Cluster) runNode(ctx context.Context, ln *localNode) error {
	cfg := c.cfg
	log := cfg.Logger.WithValues("node", ln.name)
	cs, err := kubernetes.NewForConfig(c.clientConfig(ComponentNode))
	if err != nil {
		return fmt.Errorf("cluster: node %s: %w", ln.name, err)
	}
	nc := node.Config{
		Name: ln.name, StateDir: cfg.NodeDir(ln.name), BinDirs: []string{cfg.BinDir},
		CNIBinDir: cfg.CNIBinDir, Registry: c.Registry(), Logger: log.WithName("node"),
		Bridge: ln.network.Bridge, PodCIDR: ln.network.PodCIDR,
	}
	api, err := c.kubeletAPI(ln.name)
	if err != nil {
		return err
	}
	// Its pods' CSI volumes are the machine's driver's; the apiserver
	// reaches its pods' logs and ports through its kubelet API.
	opts := []node.Option{node.WithCSIDriver(csidriver.Name, cfg.CSISocket()), node.WithKubeletAPI(api)}
	if ln.hollow != nil {
		log.Info("starting hollow node")
		nc.Capacity, opts = HollowCapacity(), append(opts, ln.hollow.NodeOptions()...)
	} else {
		log.Info("starting node", "bridge", ln.network.Bridge, "pods", ln.network.PodCIDR)
	}
	as(ComponentNode, func() { ln.node, err = node.Start(ctx, nc, cs, opts...) })
	return err
}

// runHandler runs ln's handler in this process, with its node API and its
// migration port, and its heartbeat.
func (c *Cluster) runHandler(ctx context.Context, ln *localNode) error {
	cfg, name := c.cfg, ln.name
	log := cfg.Logger.WithValues("node", name)
	// Migrations to the node come to its handler's own loopback port.
	certFile, keyFile, caFile, err := c.migrationCert(name)
	if err != nil {
		return err
	}
	migCerts, err := certfiles.New(certFile, keyFile, caFile, certfiles.WithLogger(log.WithName("migration-tls")))
	if err != nil {
		return fmt.Errorf("cluster: node %s: %w", name, err)
	}
	migLis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("cluster: node %s: migrations: %w", name, err)
	}
	opts := []handler.Option{handler.WithConnector(cfg.Connector), handler.WithLogger(log.WithName("handler")),
		handler.WithMigrationDialer(handler.TCPMigrationDialer{Certificates: migCerts}), handler.WithStartObserver(c.startStages)}
	if ln.hollow != nil {
		opts = append(opts, ln.hollow.HandlerOptions()...)
	}
	ln.handler, err = handler.New(handler.Config{
		NodeName: name, PodsDir: cfg.PodsDir(name), StateDir: filepath.Join(cfg.DataDir, "handlers", name),
		Emulation: c.config.Emulation || ln.hollow != nil, MigrationAddress: migLis.Addr().String(),
	}, opts...)
	if err != nil {
		migLis.Close()
		return err
	}
	ln.mgr, err = startManager(ComponentHandler, c.clientConfig(ComponentHandler), ctrl.Options{Cache: handler.CacheOptions(name)},
		func(mgr ctrl.Manager) error {
			if err := ln.handler.SetupWithManager(mgr); err != nil {
				return err
			}
			beat := handler.Heartbeat{Client: mgr.GetClient(), Node: name, Interval: cfg.HeartbeatInterval, Log: log.WithName("heartbeat")}
			if err := mgr.Add(beat); err != nil {
				return err
			}
			return mgr.Add(ctrlmanager.RunnableFunc(func(ctx context.Context) error {
				return ln.handler.ServeMigrations(ctx, migLis, migCerts)
			}))
		})
	if err != nil {
		migLis.Close()
		return fmt.Errorf("cluster: handler of node %s: %w", name, err)
	}
	return c.serveNodeAPI(ctx, ln)
}

// CrashNode fails local node name as a machine that dies does, for
// failure tests: its handler stops without a word (no status, no more
// heartbeats), and its node stops reporting and ends its pods' processes
// unreported (node.Node.Crash). Its Node turns NotReady when its lease
// expires, and virt-controller's node controller then fails its VMIs.
// RestartNode brings it back. Not in split mode.
func (c *Cluster) CrashNode(ctx context.Context, name string) error {
	ln, err := c.inProcessNode(name)
	if err != nil {
		return err
	}
	errs := []error{ln.api.Close(), ln.mgr.stop(), ln.handler.Close()}
	ln.api, ln.mgr, ln.handler = nil, nil, nil
	errs = append(errs, ln.node.Crash(ctx))
	return errors.Join(errs...)
}

// RestartNode starts a node CrashNode failed again, on the same state
// folders: the node cleans up after its pods and reports them, its
// handler lets go of what it ran for VMIs that are gone, and both beat
// again.
func (c *Cluster) RestartNode(ctx context.Context, name string) error {
	ln, err := c.inProcessNode(name)
	if err != nil {
		return err
	}
	if ln.handler != nil {
		return fmt.Errorf("cluster: node %s runs; CrashNode first", name)
	}
	if err := c.runNode(ctx, ln); err != nil {
		return err
	}
	return c.runHandler(ctx, ln)
}

// inProcessNode is local node name, whose handler runs in this process.
func (c *Cluster) inProcessNode(name string) (*localNode, error) {
	if c.split != nil {
		return nil, errors.New("cluster: CrashNode and RestartNode: not in split mode")
	}
	for _, n := range c.nodes {
		if n.name == name {
			return n, nil
		}
	}
	return nil, fmt.Errorf("cluster: no local node %q", name)
}

// serveVirtAPI serves virt-api on the loopback port the apiserver's
// ExternalName Service points at. The node verbs go to each node's handler
// over its node API, as on a cluster.
func (c *Cluster) serveVirtAPI(ctx context.Context) error {
	cl, err := client.New(c.clientConfig(ComponentAPI), client.Options{Scheme: scheme.New()})
	if err != nil {
		return fmt.Errorf("cluster: virt-api client: %w", err)
	}
	pki := c.cp.Config().PKI()
	cert, err := tls.LoadX509KeyPair(pki.Cert(virtAPICert), pki.Key(virtAPICert))
	if err != nil {
		return fmt.Errorf("cluster: virt-api certificate: %w", err)
	}
	front, err := frontProxy(ctx, cl)
	if err != nil {
		return err
	}
	nodeOps, err := c.nodeOps()
	if err != nil {
		return err
	}
	// nodeOps made virt-api's client certificate, which upload pods
	// require of the upload proxy.
	clientCert, err := tls.LoadX509KeyPair(pki.Cert(virtAPIClientCert), pki.Key(virtAPIClientCert))
	if err != nil {
		return fmt.Errorf("cluster: virt-api client certificate: %w", err)
	}
	signer, ok := cert.PrivateKey.(crypto.Signer)
	if !ok {
		return fmt.Errorf("cluster: virt-api's key, a %T, cannot sign upload tokens", cert.PrivateKey)
	}
	h := virtapi.Handler(cl, cl.Scheme(), virtapi.Config{
		// Read from the KubeVirt CR at each request, as virt-api does: a
		// feature gate enabled there is honoured without a restart.
		SpecOptionsFrom: controllers.LiveSpecOptions(cl, c.base),
		// The in-process components change running VMIs' specs (hotplug,
		// volume migration), as virtkit's service accounts do on a
		// cluster; the administrator does not.
		PrivilegedUsers: []string{ComponentsUser},
		APIServer:       front,
		Upload: &virtapi.Upload{Authenticator: front,
			Key:       func() (crypto.Signer, error) { return signer, nil },
			ClientTLS: func() (*tls.Config, error) { return &tls.Config{Certificates: []tls.Certificate{clientCert}}, nil }},
		Subresources: []subresources.Option{
			subresources.WithAuthenticator(front),
			subresources.WithNodeOps(nodeOps),
			subresources.WithLogger(c.cfg.Logger.WithName("virt-api")),
			subresources.WithObserver(c.apiMetrics),
		},
	})
	addr := "127.0.0.1:" + strconv.Itoa(c.cfg.VirtAPIPort)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("cluster: virt-api on %s: %w (is another virt-local running? set VirtAPIPort)", addr, err)
	}
	c.api = &http.Server{Handler: h, TLSConfig: virtapi.TLSConfig(cert), ReadHeaderTimeout: 10 * time.Second}
	as(ComponentAPI, func() { go func() { _ = c.api.ServeTLS(ln, "", "") }() })
	return c.serveExportProxy(cl, cert)
}

// serveExportProxy serves the export proxy on ExportProxyPort, with
// virt-api's certificate and client, as KubeVirt's virt-exportproxy
// serves the exports' external links.
func (c *Cluster) serveExportProxy(cl client.Reader, cert tls.Certificate) error {
	caFile := c.cp.Config().PKI().ExportCACert()
	ca := func() (*x509.CertPool, error) {
		b, err := os.ReadFile(caFile)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("cluster: no certificate in %s", caFile)
		}
		return pool, nil
	}
	addr := c.cfg.ExportProxyHost()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("cluster: the export proxy on %s: %w (is another virt-local running? set ExportProxyPort)", addr, err)
	}
	c.exportProxy = exportapi.NewProxyServer(cl, ca, func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &cert, nil },
		c.cfg.Logger.WithName("virt-exportproxy"))
	as(ComponentAPI, func() { go func() { _ = c.exportProxy.ServeTLS(ln, "", "") }() })
	return nil
}

// frontProxy reads the aggregator's identity, which the apiserver
// publishes shortly after it starts.
func frontProxy(ctx context.Context, cl client.Client) (*frontproxy.Authenticator, error) {
	for {
		fp, err := subresources.FrontProxyFromCluster(ctx, cl)
		if err == nil {
			return fp, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("cluster: the apiserver's front-proxy settings: %w", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// NodeNetworks returns each node's bridge and pod range, by node name.
func (c *Cluster) NodeNetworks() map[string]NodeNetwork {
	out := map[string]NodeNetwork{}
	for _, n := range c.nodes {
		if n.hollow == nil {
			out[n.name] = n.network
		}
	}
	return out
}

// Kubeconfig is the administrator's kubeconfig.
func (c *Cluster) Kubeconfig() string { return c.cfg.Kubeconfig() }

// Config is the cluster's configuration, defaults applied.
func (c *Cluster) Config() Config { return c.cfg }

// RESTConfig is the administrator's client configuration.
func (c *Cluster) RESTConfig() *rest.Config { return rest.CopyConfig(c.rest) }

// Down stops the cluster: the controllers first (so that nothing restarts
// what stops), then the real node if there is one (its launcher pods
// deleted while its handler records how their guests end, then the
// handler, then the node with the host as it was before), then each local node's pods (launchers shut their guests down
// gracefully) and handler, then the storage (the sidecars, then the CSI driver), virt-api, the
// control plane and the registry; /metrics goes first. State stays in the
// data directory.
func (c *Cluster) Down(ctx context.Context) error {
	errs := []error{c.stopMetrics(ctx)}
	if c.ctrl != nil {
		errs = append(errs, c.ctrl.stop())
	}
	errs = append(errs, c.stopDaemon(deploy.ControllerName))
	if c.real != nil {
		errs = append(errs, c.removeDeployments(ctx))
	}
	if c.real != nil {
		errs = append(errs, c.stopHandler(ctx), c.real.Stop(ctx))
	}
	for _, n := range c.nodes {
		if n.node != nil {
			errs = append(errs, n.node.Stop(ctx))
			if n.mgr != nil || c.split != nil {
				// The handler still runs: let it record how each guest ended
				// before it stops, so that the next Up finds no VMI that
				// claims to run.
				errs = append(errs, c.waitSettled(ctx, n.name))
			}
		}
		errs = append(errs, n.stopNodeAPI(), c.stopDaemon(HandlerDaemon(n.name)))
		if n.mgr != nil {
			errs = append(errs, n.mgr.stop())
		}
		if n.handler != nil {
			errs = append(errs, n.handler.Close())
		}
	}
	errs = append(errs, c.storage.stop())
	for _, srv := range []*http.Server{c.api, c.exportProxy} {
		if srv != nil {
			shut, cancel := context.WithTimeout(ctx, 10*time.Second)
			errs = append(errs, srv.Shutdown(shut))
			cancel()
		}
	}
	errs = append(errs, c.stopDaemons())
	if c.cp != nil {
		errs = append(errs, c.cp.Stop())
	}
	if c.reg != nil {
		errs = append(errs, c.stopRegistry(ctx))
	}
	return errors.Join(errs...)
}

// settleTimeout bounds how long Down waits for a node's VMIs to be final.
const settleTimeout = 20 * time.Second

// waitSettled waits until no VMI on node is in a phase that needs a
// running launcher (Scheduled, Running), or settleTimeout passes.
func (c *Cluster) waitSettled(ctx context.Context, node string) error {
	cl, err := c.adminClient()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	for {
		var list virtv1.VirtualMachineInstanceList
		err := cl.List(ctx, &list, client.MatchingFields{"status.nodeName": node})
		busy := []string{}
		for _, v := range list.Items {
			if v.Status.Phase == virtv1.Running || v.Status.Phase == virtv1.Scheduled {
				busy = append(busy, v.Namespace+"/"+v.Name)
			}
		}
		if err == nil && len(busy) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			c.cfg.Logger.Info("VMIs still claim to run on a stopped node; the handler settles them at the next start", "node", node, "vmis", busy, "error", fmt.Sprint(err))
			return nil
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// adminClient is a client of the administrator's.
func (c *Cluster) adminClient() (client.Client, error) {
	cl, err := client.New(c.rest, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, fmt.Errorf("cluster: client: %w", err)
	}
	return cl, nil
}

// manager is a started controller-runtime manager.
type manager struct {
	cancel context.CancelFunc
	done   chan error
}

// startManager starts a controller-runtime manager as component (its
// goroutines carry the component's pprof label).
func startManager(component string, rc *rest.Config, opts ctrl.Options, setup func(ctrl.Manager) error) (*manager, error) {
	skip := true
	opts.Scheme = scheme.New()
	opts.Metrics = metricsserver.Options{BindAddress: "0"}
	opts.HealthProbeBindAddress = "0"
	opts.LeaderElection = false
	opts.Controller = config.Controller{SkipNameValidation: &skip}
	mgr, err := ctrl.NewManager(rc, opts)
	if err != nil {
		return nil, err
	}
	if err := setup(mgr); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &manager{cancel: cancel, done: make(chan error, 1)}
	as(component, func() { go func() { m.done <- mgr.Start(ctx) }() })
	return m, nil
}

func (m *manager) stop() error {
	m.cancel()
	return <-m.done
}
