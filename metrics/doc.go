// Package metrics owns virtkit's Prometheus series: what each daemon
// exports, under KubeVirt's metric names where KubeVirt has the same
// metric, and the collectors that produce them.
//
// Every collector registers into a prometheus.Registerer it is given (no
// package-level registry of ours); daemons pass controller-runtime's
// registry, so the reconcile counts and latencies and the workqueue series
// controller-runtime keeps appear on the same /metrics.
//
// This file's room so far:
//   - [ClientRequests]: kubevirt_rest_client_requests_total, each
//     component's requests to the apiserver by verb, resource and code,
//     counted in the client (the density benchmark's writes per VMI).
package metrics
