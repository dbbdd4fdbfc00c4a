package metrics

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// OutdatedName is KubeVirt's gauge of the VMIs whose launcher is not of
// the installed version.
const OutdatedName = "kubevirt_vmi_number_of_outdated"

// Outdated is virt-controller's collector of kubevirt_vmi_number_of_outdated:
// the number of VMIs not running in the current launcher image, as the
// workload updater last counted it in the installed KubeVirt CR's
// status.outdatedVirtualMachineInstanceWorkloads, read from the cache when
// Prometheus scrapes. Every replica reports the same figure, not only the
// leader that counts; 0 until the updater has counted (the CR is not yet
// Deployed).
type Outdated struct {
	r    client.Reader
	o    options
	desc *prometheus.Desc
}

var _ prometheus.Collector = (*Outdated)(nil)

// NewOutdated returns the collector over the KubeVirt CRs r lists (the
// manager's cache).
func NewOutdated(r client.Reader, opts ...Option) *Outdated {
	return &Outdated{r: r, o: newOptions(opts), desc: prometheus.NewDesc(OutdatedName,
		"Indication for the total number of VirtualMachineInstance workloads that are not running within the most up-to-date version of the virt-launcher environment.",
		nil, nil)}
}

// Describe sends the one descriptor.
func (c *Outdated) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect sends the count. Only the installed CR carries one (a second CR
// is refused or left alone); a list that fails is logged and leaves the
// series out of this scrape.
func (c *Outdated) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.o.timeout)
	defer cancel()
	var list virtv1.KubeVirtList
	if err := c.r.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		c.o.log.Error(err, "listing KubeVirt CRs for "+OutdatedName)
		return
	}
	n := 0
	for _, kv := range list.Items {
		if p := kv.Status.OutdatedVirtualMachineInstanceWorkloads; p != nil {
			n += *p
		}
	}
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n))
}
