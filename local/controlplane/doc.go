// Package controlplane runs a real single-machine Kubernetes control plane
// from binaries (etcd, kube-apiserver, kube-scheduler and
// kube-controller-manager, as `make kube-bins` builds them into
// _output/bin): it creates the certificates and kubeconfigs once in a data
// directory, starts the four processes on loopback, waits until the
// apiserver is ready, restarts a process that dies, and stops them all.
// State lives in the data directory, so a second start finds the cluster as
// it was left.
//
// It owns the processes, their flags, the PKI and the kubeconfigs. It knows
// nothing of virtkit's kinds: installing CRDs, webhooks and RBAC, and running
// nodes, is the caller's (daemons/virt-local).
package controlplane
