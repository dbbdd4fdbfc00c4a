// Package testenv is virtkit's test substrate: the real parts that integration
// tests run against, started per test and checked for leftovers.
//
//   - [ControlPlane]: a real etcd and kube-apiserver (controller-runtime's
//     envtest with the binaries `make kube-bins` builds into _output/bin) with
//     the project's CRDs from deploy/crds installed.
//   - [AggregatedAPI]: an extension API server (subresources.kubevirt.io)
//     served from the test process behind ControlPlane's aggregator: its
//     certificates, the apiserver's front-proxy flags, an ExternalName Service
//     and an APIService, waited on until Available.
//   - [Libvirtd]: a private libvirtd (virt/libvirtd) in its own mount
//     namespace with a unique host UUID and per-test folders.
//   - [Guest]: the test guest that `make guest` builds (hack/guest; see
//     internal/testguest), built on demand when missing, and [WaitConsole]
//     to read its serial console.
//   - [Main]: wraps a package's TestMain; after the tests it fails the run if
//     any process, mount, network namespace or cgroup the tests started is
//     still there.
//
// Everything a test starts carries a marker: the environment variable
// [OwnerEnv] set to the test process's PID, and folders named
// /tmp/vkt-PID-*; the leftover check finds processes by either, including
// guests that libvirt started with a clean environment (they see the mounts).
//
// Integration tests skip only under -short. A missing binary or package fails
// the test with the command that provides it.
package testenv
