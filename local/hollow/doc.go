// Package hollow makes a virt-local node hollow, as kubemark's hollow nodes
// are for the kubelet: its launcher pods run no libvirtd and no QEMU, so
// that the API, the controllers and the handlers do their real work for
// more VMIs than this machine could boot.
//
// A [Node] supplies the effects of local/node and controllers/handler:
//
//   - [Node.NodeOptions]: a process runner that runs each launcher pod's
//     virt-launcher in this process, as virt/launcher's Run with a
//     domain Manager of virt/domain/fake instead of a private libvirtd (the
//     socket the handler opens is a real unix socket in the pod's folder,
//     the ready and exit files and the termination message are written as a
//     launcher writes them); an image store whose every image holds one
//     empty disk file; and local/node/nodefake's network (addresses, no
//     namespaces). Any other container is a process that runs until it is
//     stopped. The readiness probe `test -f PATH` is answered from the pod's
//     files; other exec commands fail with 127.
//   - [Node.HandlerOptions]: the handler reaches each pod's fake Manager
//     through the socket, its network through virt/network's Fake, and plans
//     and prepares disks with virt/storage/fake.
//
// What a hollow node does not do: boot anything, copy or convert a byte of
// a disk, connect a network, or migrate (a migration's target gets no
// domain). What its guests report (CPU time, memory, the agent) is the
// fakes'. Everything it makes lives under the Node's folder and its pods'
// folders, and ends with them; nothing on the host outside them changes.
package hollow
