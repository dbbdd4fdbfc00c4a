// Package testenv is virtkit's test substrate: the real parts that integration
// tests run against, started per test and checked for leftovers.
//
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
// The parts that need a Kubernetes control plane (a real kube-apiserver, an
// aggregated API, a webhook caller, a write counter) are in the kubeenv
// subpackage, so that packages whose tests need none link no client-go.
//
// Integration tests skip only under -short. A missing binary or package fails
// the test with the command that provides it.
package testenv
