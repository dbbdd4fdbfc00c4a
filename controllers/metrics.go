package controllers

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	virtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/metrics"
)

// AddMetrics registers virt-controller's collectors into reg:
// metrics.VMIStats (kubevirt_vmi_phase_count, kubevirt_vmi_info),
// metrics.MigrationStats (kubevirt_vmi_migrations_in_*_phase,
// kubevirt_vmi_migration_succeeded/failed), metrics.VMStats
// (kubevirt_number_of_vms), metrics.Outdated
// (kubevirt_vmi_number_of_outdated), metrics.StorageProfiles
// (kubevirt_cdi_storageprofile_info) and metrics.DataVolumesPending
// (kubevirt_cdi_datavolume_pending), all computed from mgr's cache when
// Prometheus scrapes. It makes the cache watch migrations and KubeVirt CRs
// too, so that a scrape makes no API call. Call it before mgr
// starts; daemons/virt-controller passes controller-runtime's registry,
// which its /metrics serves with the reconcile and workqueue series.
func AddMetrics(mgr ctrl.Manager, reg prometheus.Registerer, opts ...metrics.Option) error {
	for _, obj := range []client.Object{&virtv1.VirtualMachineInstance{}, &virtv1.VirtualMachine{}, &virtv1.VirtualMachineInstanceMigration{}, &virtv1.KubeVirt{}} {
		if _, err := mgr.GetCache().GetInformer(context.Background(), obj); err != nil {
			return fmt.Errorf("controllers: metrics: watching %T: %w", obj, err)
		}
	}
	r := mgr.GetCache()
	for _, c := range []prometheus.Collector{metrics.NewVMIStats(r, opts...), metrics.NewMigrationStats(r, opts...), metrics.NewVMStats(r, opts...),
		metrics.NewOutdated(r, opts...), metrics.NewStorageProfiles(r, opts...), metrics.NewDataVolumesPending(r, opts...)} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("controllers: metrics: %w", err)
		}
	}
	return nil
}
