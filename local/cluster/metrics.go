package cluster

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"runtime/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/client-go/rest"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/virtkit/virtkit/controllers/clientrate"
	"github.com/virtkit/virtkit/metrics"
	"github.com/virtkit/virtkit/virt/clusterconfig"
)

// The components of a cluster, as they name themselves in
// kubevirt_rest_client_requests_total's component label and in the
// ComponentLabel pprof label of their goroutines.
const (
	ComponentAPI        = "virt-api"
	ComponentController = "virt-controller"
	ComponentHandler    = "virt-handler"
	ComponentNode       = "local-node"
	ComponentStorage    = "local-csi-driver"
	ComponentInstall    = "virt-local"
	// ComponentHollowLauncher is the launchers of hollow nodes
	// (Config.HollowNodes), which run in this process.
	ComponentHollowLauncher = "hollow-launcher"
)

// ComponentLabel is the pprof label each component's goroutines carry:
// virt-local runs them all in one process, and a CPU profile split by this
// label tells what each costs.
const ComponentLabel = "component"

// DefaultMetricsAddr is where /metrics is served by default: a free
// loopback port, which Cluster.MetricsAddr (and `virt-local status`) tells.
const DefaultMetricsAddr = "127.0.0.1:0"

// startMetrics makes the cluster's registry (Config.Metrics, or one of its
// own with the Go and process collectors), the request counter every
// component's client goes through, the handlers' start stages and virt-api's
// series.
func (c *Cluster) startMetrics() error {
	c.metrics = c.cfg.Metrics
	if c.metrics == nil {
		c.metrics = prometheus.NewRegistry()
		c.metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	var err error
	if c.requests, err = metrics.NewClientRequests(c.metrics); err != nil {
		return err
	}
	if c.startStages, err = metrics.NewStartStages(c.metrics); err != nil {
		return err
	}
	c.apiMetrics, err = metrics.NewSubresources(c.metrics)
	return err
}

// addGuestMetrics registers the per-VMI series of every node's handler:
// one collector over all handlers (their series differ by the node label).
func (c *Cluster) addGuestMetrics() error {
	listers := make([]metrics.GuestLister, 0, len(c.nodes))
	for _, n := range c.nodes {
		if n.handler != nil { // nil in split mode: the handler is a process
			listers = append(listers, n.handler)
		}
	}
	if err := c.metrics.Register(metrics.NewDomainStats(listers, metrics.WithLogger(c.cfg.Logger.WithName("metrics")))); err != nil {
		return fmt.Errorf("cluster: metrics: %w", err)
	}
	return nil
}

// serveMetrics serves /metrics on Config.MetricsAddr: the cluster's
// registry and controller-runtime's (reconciles and workqueues of every
// manager in this process), gathered together.
func (c *Cluster) serveMetrics() error {
	if c.cfg.MetricsAddr == "0" {
		return nil
	}
	ln, err := net.Listen("tcp", c.cfg.MetricsAddr)
	if err != nil {
		return fmt.Errorf("cluster: metrics on %s: %w (set MetricsAddr)", c.cfg.MetricsAddr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", metrics.Handler(metrics.Merge(c.metrics, ctrlmetrics.Registry)))
	c.metricsSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	c.metricsAddr = ln.Addr().String()
	go func() { _ = c.metricsSrv.Serve(ln) }()
	return nil
}

// stopMetrics stops serving /metrics.
func (c *Cluster) stopMetrics(ctx context.Context) error {
	if c.metricsSrv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return c.metricsSrv.Shutdown(ctx)
}

// Metrics is the cluster's registry: its components' series.
func (c *Cluster) Metrics() *prometheus.Registry { return c.metrics }

// MetricsAddr is the host:port /metrics is served on; empty when
// Config.MetricsAddr turned it off.
func (c *Cluster) MetricsAddr() string { return c.metricsAddr }

// clientConfig is the in-process components' client configuration,
// counted as component's requests.
func (c *Cluster) clientConfig(component string) *rest.Config {
	base := c.components
	if base == nil {
		base = c.rest
	}
	cfg := c.requests.Wrap(component, base)
	if r, ok := c.clientRate(component); ok {
		// A bucket of its own per call: one per handler and node, as each
		// is a process of its own elsewhere.
		cfg = clientrate.Configure(cfg, clientrate.NewLimiter(r))
	}
	return cfg
}

// KubeletRate is a local node's client rate: the kubelet's default
// (kubeAPIQPS 50, kubeAPIBurst 100).
func KubeletRate() clusterconfig.RateLimit { return clusterconfig.RateLimit{QPS: 50, Burst: 100} }

// clientRate is component's client rate: the KubeVirt CR's (as it was at
// start) for virtkit's components, the kubelet's for a node; false for
// the others (client-go's default).
func (c *Cluster) clientRate(component string) (clusterconfig.RateLimit, bool) {
	switch component {
	case ComponentAPI:
		return clusterconfig.ClientRateLimit(c.kv, clusterconfig.ClientAPI), true
	case ComponentController:
		return clusterconfig.ClientRateLimit(c.kv, clusterconfig.ClientController), true
	case ComponentHandler:
		return clusterconfig.ClientRateLimit(c.kv, clusterconfig.ClientHandler), true
	case ComponentNode:
		return KubeletRate(), true
	}
	return clusterconfig.RateLimit{}, false
}

// as runs f with component's pprof label, which every goroutine f starts
// inherits.
func as(component string, f func()) {
	pprof.Do(context.Background(), pprof.Labels(ComponentLabel, component), func(context.Context) { f() })
}
