package metrics

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// MigrationStats is virt-controller's collector of the cluster's
// VirtualMachineInstanceMigrations, computed from the controllers' cache
// when Prometheus scrapes, with KubeVirt's names and semantics:
//
//   - kubevirt_vmi_migrations_in_{unset,pending,scheduling,running}_phase:
//     migrations per phase; running counts Scheduled, PreparingTarget,
//     TargetReady, Running, WaitingForSync and Synchronizing;
//   - kubevirt_vmi_migration_succeeded{vmi,vmim,namespace} and
//     kubevirt_vmi_migration_failed{vmi,vmim,namespace}: 1 per migration
//     object that ended so, while it exists.
type MigrationStats struct {
	r                                   client.Reader
	o                                   options
	unset, pending, scheduling, running *prometheus.Desc
	succeeded, failed                   *prometheus.Desc
}

var _ prometheus.Collector = (*MigrationStats)(nil)

// NewMigrationStats returns the collector over the migrations r lists (the
// manager's cache).
func NewMigrationStats(r client.Reader, opts ...Option) *MigrationStats {
	gauge := func(phase string) *prometheus.Desc {
		return prometheus.NewDesc("kubevirt_vmi_migrations_in_"+phase+"_phase", "Number of current "+phase+" migrations.", nil, nil)
	}
	ended := []string{"vmi", "vmim", "namespace"}
	return &MigrationStats{
		r: r, o: newOptions(opts),
		unset: gauge("unset"), pending: gauge("pending"), scheduling: gauge("scheduling"), running: gauge("running"),
		succeeded: prometheus.NewDesc("kubevirt_vmi_migration_succeeded", "Indicates if the VMI migration succeeded.", ended, nil),
		failed:    prometheus.NewDesc("kubevirt_vmi_migration_failed", "Indicates if the VMI migration failed.", ended, nil),
	}
}

// Describe sends the six descriptors.
func (c *MigrationStats) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.unset, c.pending, c.scheduling, c.running, c.succeeded, c.failed} {
		ch <- d
	}
}

// Collect lists the migrations and sends the counts (zero included) and
// one series per ended migration. A list that fails is logged and leaves
// the series out of this scrape.
func (c *MigrationStats) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.o.timeout)
	defer cancel()
	var list virtv1.VirtualMachineInstanceMigrationList
	if err := c.r.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		c.o.log.Error(err, "listing VirtualMachineInstanceMigrations for kubevirt_vmi_migrations_in_*_phase")
		return
	}
	counts := map[*prometheus.Desc]int{c.unset: 0, c.pending: 0, c.scheduling: 0, c.running: 0}
	for _, m := range list.Items {
		switch m.Status.Phase {
		case virtv1.MigrationPhaseUnset:
			counts[c.unset]++
		case virtv1.MigrationPending:
			counts[c.pending]++
		case virtv1.MigrationScheduling:
			counts[c.scheduling]++
		case virtv1.MigrationScheduled, virtv1.MigrationPreparingTarget, virtv1.MigrationTargetReady,
			virtv1.MigrationRunning, virtv1.MigrationWaitingForSync, virtv1.MigrationSynchronizing:
			counts[c.running]++
		case virtv1.MigrationSucceeded:
			ch <- prometheus.MustNewConstMetric(c.succeeded, prometheus.GaugeValue, 1, m.Spec.VMIName, m.Name, m.Namespace)
		case virtv1.MigrationFailed:
			ch <- prometheus.MustNewConstMetric(c.failed, prometheus.GaugeValue, 1, m.Spec.VMIName, m.Name, m.Namespace)
		}
	}
	for d, n := range counts {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(n))
	}
}
