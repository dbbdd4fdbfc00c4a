// Package virtapi is virt-api as a library: one http.Handler that serves,
// on the one TLS port the apiserver calls, everything virt-api answers. The
// packages below it are its parts:
//
//   - virtapi/admission: the mutating and validating webhooks of
//     VirtualMachines and VirtualMachineInstances (over virt/spec);
//   - virtapi/eviction: the pod eviction webhook that turns a drain of a
//     launcher pod into an evacuation (its decision is virt/migrate's);
//   - virtapi/subresources: the subresources.kubevirt.io aggregated API
//     KubeVirt's virtctl speaks, and a Go client of it;
//   - virtapi/nodeapi: the node-local API virt-api calls on a VMI's handler
//     for the verbs only that node can perform (pause, console, VNC, ...).
//
// daemons/virt-api serves [Handler] as a process; daemons/virt-local serves
// it in-process. This package owns only the composition: which paths go
// where, and the TLS settings that let the aggregator present its
// front-proxy certificate while webhook calls come without one. Nothing in
// virt/ or controllers/ imports virtapi.
package virtapi
