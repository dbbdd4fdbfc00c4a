package metrics

import (
	"context"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/utils/ptr"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// StorageProfileInfoName is CDI's gauge of each StorageProfile.
const StorageProfileInfoName = "kubevirt_cdi_storageprofile_info"

// Annotations of a StorageClass that the info's labels report.
const (
	annDefaultClass     = "storageclass.kubernetes.io/is-default-class"
	annDefaultVirtClass = "storageclass.kubevirt.io/is-default-virt-class"
)

// StorageProfiles is virt-controller's collector of
// kubevirt_cdi_storageprofile_info, read from the cache when Prometheus
// scrapes: 1 per StorageProfile, labelled as CDI's: storageclass,
// provisioner, complete (it has claim property sets), default and
// virtdefault (its class's annotations), rwx (a set allows ReadWriteMany),
// smartclone (SmartClone) and degraded (no ReadWriteMany, or no smart
// clone).
type StorageProfiles struct {
	r    client.Reader
	o    options
	desc *prometheus.Desc
}

var _ prometheus.Collector = (*StorageProfiles)(nil)

// NewStorageProfiles returns the collector over the StorageProfiles and
// StorageClasses r lists (the manager's cache).
func NewStorageProfiles(r client.Reader, opts ...Option) *StorageProfiles {
	return &StorageProfiles{r: r, o: newOptions(opts), desc: prometheus.NewDesc(StorageProfileInfoName,
		"`StorageProfiles` info labels: `storageclass`, `provisioner`, `complete` indicates if all storage profiles recommended PVC settings are complete, "+
			"`default` indicates if it's the Kubernetes default storage class, `virtdefault` indicates if it's the default virtualization storage class, "+
			"`rwx` indicates if the storage class supports `ReadWriteMany`, `smartclone` indicates if it supports snapshot or CSI based clone, "+
			"`degraded` indicates it is not optimal for virtualization",
		[]string{"storageclass", "provisioner", "complete", "default", "virtdefault", "rwx", "smartclone", "degraded"}, nil)}
}

// Describe sends the one descriptor.
func (c *StorageProfiles) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect sends one series per StorageProfile whose status names its
// class; a list that fails is logged and leaves the metric out.
func (c *StorageProfiles) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.o.timeout)
	defer cancel()
	var profiles cdiv1.StorageProfileList
	var classes storagev1.StorageClassList
	if err := c.r.List(ctx, &profiles, client.UnsafeDisableDeepCopy); err != nil {
		c.o.log.Error(err, "listing StorageProfiles for "+StorageProfileInfoName)
		return
	}
	if err := c.r.List(ctx, &classes, client.UnsafeDisableDeepCopy); err != nil {
		c.o.log.Error(err, "listing StorageClasses for "+StorageProfileInfoName)
		return
	}
	ann := map[string]map[string]string{}
	for i := range classes.Items {
		ann[classes.Items[i].Name] = classes.Items[i].Annotations
	}
	for i := range profiles.Items {
		st := profiles.Items[i].Status
		if st.StorageClass == nil || st.Provisioner == nil {
			continue
		}
		rwx := false
		for _, s := range st.ClaimPropertySets {
			for _, m := range s.AccessModes {
				rwx = rwx || m == corev1.ReadWriteMany
			}
		}
		a := ann[*st.StorageClass]
		b := strconv.FormatBool
		smartClone := SmartClone(st)
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, 1, *st.StorageClass, *st.Provisioner,
			b(len(st.ClaimPropertySets) > 0), b(a[annDefaultClass] == "true"), b(a[annDefaultVirtClass] == "true"),
			b(rwx), b(smartClone), b(!rwx || !smartClone))
	}
}

// SmartClone says whether the storage of a StorageProfile's class clones
// claims itself, as CDI's smartclone label decides from the profile's
// status: not with the copy strategy; with csi-clone; with snapshot (or no
// strategy), when a VolumeSnapshotClass serves its driver (the status
// names one). CDI also checks, for csi-clone, that a CSIDriver object of
// the provisioner's name exists; virtkit takes the strategy its
// StorageProfile controller chose as the proof.
func SmartClone(st cdiv1.StorageProfileStatus) bool {
	switch ptr.Deref(st.CloneStrategy, "") {
	case cdiv1.CloneStrategyHostAssisted:
		return false
	case cdiv1.CloneStrategyCsiClone:
		return true
	}
	return ptr.Deref(st.SnapshotClass, "") != ""
}
