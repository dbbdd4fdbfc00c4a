package metrics

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// VMStats is virt-controller's collector of the cluster's
// VirtualMachines: kubevirt_number_of_vms{namespace}, the VMs per
// namespace (KubeVirt now records it as namespace:kubevirt_vm:sum),
// computed from the controllers' cache when Prometheus scrapes.
type VMStats struct {
	r     client.Reader
	o     options
	count *prometheus.Desc
}

var _ prometheus.Collector = (*VMStats)(nil)

// NewVMStats returns the collector over the VMs r lists (the manager's cache).
func NewVMStats(r client.Reader, opts ...Option) *VMStats {
	return &VMStats{r: r, o: newOptions(opts),
		count: prometheus.NewDesc("kubevirt_number_of_vms", "The number of VMs in the cluster by namespace.", []string{"namespace"}, nil)}
}

// Describe sends the descriptor.
func (c *VMStats) Describe(ch chan<- *prometheus.Desc) { ch <- c.count }

// Collect lists the VMs and sends their count per namespace. A list that
// fails is logged and leaves the series out of this scrape.
func (c *VMStats) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.o.timeout)
	defer cancel()
	var list virtv1.VirtualMachineList
	if err := c.r.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		c.o.log.Error(err, "listing VirtualMachines for kubevirt_number_of_vms")
		return
	}
	counts := map[string]int{}
	for _, vm := range list.Items {
		counts[vm.Namespace]++
	}
	for ns, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.count, prometheus.GaugeValue, float64(n), ns)
	}
}
