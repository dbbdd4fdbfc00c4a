// Package localcluster starts a virt-local cluster (local/cluster) for a
// test or a benchmark, the one way test/e2e and hack/bench do it: a fresh
// data directory, free loopback ports, the control plane binaries,
// virt-launcher and CNI plugins of a checkout's _output, the nodes named,
// real libvirt for the handlers, the test guest pushed to the cluster's
// registry as a containerDisk, and a client; Stop brings it all down and
// removes the data directory.
//
// Start serves programs (the benchmarks); ForTest serves tests, with the
// test's own temporary directory, logger and cleanup. It links libvirt
// through cgo (virt/domain/libvirt), as its users do.
package localcluster
