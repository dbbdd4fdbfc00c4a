package cluster

import (
	"context"
	"runtime/pprof"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/client-go/rest"

	"github.com/virtkit/virtkit/metrics"
)

// The components of a cluster, as they name themselves in
// kubevirt_rest_client_requests_total's component label and in the
// ComponentLabel pprof label of their goroutines.
const (
	ComponentAPI         = "virt-api"
	ComponentController  = "virt-controller"
	ComponentHandler     = "virt-handler"
	ComponentNode        = "local-node"
	ComponentProvisioner = "local-provisioner"
	ComponentInstall     = "virt-local"
)

// ComponentLabel is the pprof label each component's goroutines carry:
// virt-local runs them all in one process, and a CPU profile split by this
// label tells what each costs.
const ComponentLabel = "component"

// startMetrics makes the cluster's registry (Config.Metrics, or one of its
// own with the Go and process collectors) and the request counter every
// component's client goes through.
func (c *Cluster) startMetrics() error {
	c.metrics = c.cfg.Metrics
	if c.metrics == nil {
		c.metrics = prometheus.NewRegistry()
		c.metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	var err error
	c.requests, err = metrics.NewClientRequests(c.metrics)
	return err
}

// Metrics is the cluster's registry: its components' series.
func (c *Cluster) Metrics() *prometheus.Registry { return c.metrics }

// clientConfig is the administrator's client configuration, counted as
// component's requests.
func (c *Cluster) clientConfig(component string) *rest.Config {
	return c.requests.Wrap(component, c.rest)
}

// as runs f with component's pprof label, which every goroutine f starts
// inherits.
func as(component string, f func()) {
	pprof.Do(context.Background(), pprof.Labels(ComponentLabel, component), func(context.Context) { f() })
}
