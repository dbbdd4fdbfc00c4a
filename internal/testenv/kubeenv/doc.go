// Package kubeenv is the Kubernetes half of virtkit's test substrate: the
// parts of an integration test that need a control plane.
//
//   - [ControlPlane]: a real etcd and kube-apiserver (controller-runtime's
//     envtest with the binaries `make kube-bins` builds into _output/bin) with
//     the project's CRDs from deploy/crds installed.
//   - [AggregatedAPI]: an extension API server (subresources.kubevirt.io)
//     served from the test process behind ControlPlane's aggregator: its
//     certificates, the apiserver's front-proxy flags, an ExternalName Service
//     and an APIService, waited on until Available.
//   - [WebhookCaller]: lets the apiserver call admission webhooks served from
//     the test process.
//   - [WriteCounter]: a client that records every write, to assert how many
//     writes a controller makes.
//
// Host-level helpers (libvirtd, the test guest, folders, the leftover check)
// are in the parent package testenv, which links no Kubernetes client.
package kubeenv
