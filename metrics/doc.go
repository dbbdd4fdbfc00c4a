// Package metrics owns virtkit's Prometheus series: what each daemon
// exports, under KubeVirt's metric names and labels where KubeVirt has the
// same metric, and the collectors that produce them. docs/metrics.md lists
// every series, its type, labels and daemon.
//
// Every collector registers into a prometheus.Registerer it is given (no
// package-level registry of ours); daemons pass controller-runtime's
// registry, so the reconcile counts and latencies and the workqueue series
// controller-runtime keeps appear on the same /metrics. Collectors that
// describe the cluster or the guests compute their series when Prometheus
// scrapes, from a cache or the hypervisor, bounded by a timeout: there is
// no polling loop.
//
// What it holds:
//   - [ClientRequests]: kubevirt_rest_client_requests_total, each
//     component's requests to the apiserver by verb, resource and code,
//     counted in the client (the density benchmark's writes per VMI);
//   - [DomainStats]: virt-handler's per-VMI CPU, memory, block and network
//     counters of the guests a [GuestLister] (controllers/handler) runs,
//     read from libvirt at scrape time;
//   - [VMIStats], [MigrationStats], [VMStats]: virt-controller's
//     kubevirt_vmi_phase_count, kubevirt_vmi_info, kubevirt_vmi_non_evictable, migration phase counts
//     and outcomes, kubevirt_number_of_vms, from the manager's cache
//     (controllers.AddMetrics registers them);
//   - [StartStages]: virt-handler's histogram of each stage of a guest's
//     start (a controllers/handler.StartObserver), the density benchmark's
//     breakdown of the handler's part;
//   - [Subresources]: virt-api's subresource calls and open console and
//     VNC streams (a subresources.Observer);
//   - [Handler] and [Merge]: serving registries, several at once (virt-local
//     serves its components' registry with controller-runtime's).
//
// It must not touch the objects it reports on: it only reads.
package metrics
