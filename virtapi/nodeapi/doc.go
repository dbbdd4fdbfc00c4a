// Package nodeapi is the small node-local API that virt-api calls on the
// handler of the node a VMI runs on, for the verbs only that node can
// perform: pause, unpause, soft reboot, and the console and VNC streams.
// Everything else the subresource API does (start, stop, restart, migrate,
// add and remove volume) is a write to the Kubernetes API and never reaches
// a node.
//
// It owns:
//   - the [Ops] interface (implemented by controllers/handler) and its
//     sentinel errors;
//   - [Server], the HTTP side a handler serves (behind TLS that requires
//     virt-api's client certificate), and [Client], virt-api's side; the
//     paths are PUT /v1/namespaces/NS/virtualmachineinstances/NAME/{pause,
//     unpause,softreboot} and GET .../{console,vnc}, the streams being
//     websockets of binary messages (subprotocol plain.kubevirt.io); the
//     sentinels travel as 404, 409 and 503;
//   - how virt-api finds a node's handler: [Locator], with [PodLocator]
//     finding the Running, Ready handler pod on the node (what virt-api
//     uses: a pod is placed by the scheduler, not written by the node),
//     [StaticLocator] for fixed tables, and [AnnotationLocator] reading the
//     Node annotation [HandlerAddressAnnotation] that the handler publishes
//     for people and tools (any node's credentials can rewrite a Node, so
//     it serves only setups that trust every node);
//   - [Fake], an in-memory Ops; it passes the same contract suite as
//     Client over Server.
//
// It must not import virt/ or controllers/: it speaks namespaces and names,
// not domains.
package nodeapi
