// Package subresources serves the subresources.kubevirt.io/v1 aggregated API
// the way KubeVirt's virt-api does, so KubeVirt's virtctl and Go client work
// against virtkit unchanged: `virtctl start/stop/restart/migrate/pause/
// unpause/softreboot/reset/console/vnc/vnc screenshot/port-forward/
// addvolume/removevolume`.
//
// [Server] is one http.Handler. It owns:
//   - discovery (/apis, /apis/subresources.kubevirt.io, .../v1), /healthz and
//     .../v1/version;
//   - the VirtualMachine verbs start, stop, restart, migrate, addvolume and
//     removevolume, which are only writes to the Kubernetes API with
//     KubeVirt's semantics: status.stateChangeRequests (consumed by
//     controllers/vm; the two must agree), spec.runStrategy or spec.running,
//     a VirtualMachineInstanceMigration, hotplug volumes in the VM template
//     and the running VMI's spec, each honouring dryRun;
//   - the VirtualMachineInstance verbs pause, unpause, softreboot, reset,
//     console, vnc and vnc/screenshot, which only the VMI's node can do: they
//     go to that node's handler through nodeapi (a [nodeapi.Locator] finds
//     it, a [nodeapi.Client] calls it); console and vnc are websockets
//     (subprotocol plain.kubevirt.io) of raw bytes in binary messages;
//   - portforward on VMs and VMIs, a websocket of the same kind to a port of
//     the VMI's first interface address, which virt-api dials itself as
//     KubeVirt's does ([WithGuestDialer]);
//   - authentication delegated to the aggregator ([frontproxy.Authenticator]) and
//     authorization of every call with a SubjectAccessReview
//     ([SubjectAccessReviewer]), with the resources and verbs KubeVirt's
//     kubevirt.io:edit ClusterRole names (virtualmachines/start: update,
//     virtualmachineinstances/console: get, ...);
//   - errors as metav1.Status with KubeVirt's codes and messages;
//   - telling an [Observer] (metrics.Subresources) about each call's outcome
//     and each open console or VNC stream.
//
// It must not touch: virt/ (no domains, no nodes), the VMI's status, launcher
// pods except the force-restart pod delete KubeVirt also does, or anything
// the controllers own beyond the requests KubeVirt's virt-api writes.
//
// Why no k8s.io/apiserver: the generic apiserver's delegated authentication
// and authorization would bring k8s.io/apiserver, etcd's client, OpenTelemetry
// and about a hundred packages into the SDK's module graph (none of it is
// there today), to read four headers from a verified client certificate and
// post a SubjectAccessReview. The ~200 lines of authn.go and authz.go do that
// and nothing else; KubeVirt's virt-api does the same by hand.
package subresources
