package metrics

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DataVolumePendingName is CDI's gauge of DataVolumes waiting for the
// default StorageClass.
const DataVolumePendingName = "kubevirt_cdi_datavolume_pending"

// DataVolumesPending is virt-controller's collector of
// kubevirt_cdi_datavolume_pending, read from the cache when Prometheus
// scrapes: as CDI's, the number of DataVolumes that name no StorageClass
// (they take the default one) and are Pending or have no phase yet. It is
// always sent, 0 included: CDI's CDINoDefaultStorageClass alert reads a
// missing series as pending DataVolumes.
type DataVolumesPending struct {
	r    client.Reader
	o    options
	desc *prometheus.Desc
}

var _ prometheus.Collector = (*DataVolumesPending)(nil)

// NewDataVolumesPending returns the collector over the DataVolumes r lists
// (the manager's cache).
func NewDataVolumesPending(r client.Reader, opts ...Option) *DataVolumesPending {
	return &DataVolumesPending{r: r, o: newOptions(opts), desc: prometheus.NewDesc(DataVolumePendingName,
		"Number of DataVolumes pending for default storage class to be configured", nil, nil)}
}

// Describe sends the one descriptor.
func (c *DataVolumesPending) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect sends the count; a list that fails is logged and leaves the
// metric out.
func (c *DataVolumesPending) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.o.timeout)
	defer cancel()
	var dvs cdiv1.DataVolumeList
	if err := c.r.List(ctx, &dvs, client.UnsafeDisableDeepCopy); err != nil {
		c.o.log.Error(err, "listing DataVolumes for "+DataVolumePendingName)
		return
	}
	n := 0
	for i := range dvs.Items {
		if PendingForDefaultClass(&dvs.Items[i]) {
			n++
		}
	}
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n))
}

// PendingForDefaultClass says whether dv counts in
// kubevirt_cdi_datavolume_pending: it names no StorageClass in spec.pvc or
// spec.storage, and its phase is Pending or not set.
func PendingForDefaultClass(dv *cdiv1.DataVolume) bool {
	var class *string
	switch {
	case dv.Spec.PVC != nil:
		class = dv.Spec.PVC.StorageClassName
	case dv.Spec.Storage != nil:
		class = dv.Spec.Storage.StorageClassName
	}
	return class == nil && (dv.Status.Phase == cdiv1.PhaseUnset || dv.Status.Phase == cdiv1.Pending)
}
