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
//   - how virt-api finds a node's handler: [Locator], with
//     [AnnotationLocator] reading the Node annotation
//     [HandlerAddressAnnotation] (virtkit.io/handler-address) that the
//     handler publishes, and [StaticLocator] for fixed tables;
//   - [Fake], an in-memory Ops; it passes the same contract suite as
//     Client over Server.
//
// It must not import virt/ or controllers/: it speaks namespaces and names,
// not domains.
package nodeapi
