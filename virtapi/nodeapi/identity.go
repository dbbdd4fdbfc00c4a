package nodeapi

// ClientName is the common name of the client certificate virt-api
// presents to the handlers, KubeVirt's: a handler's node API admits no
// other caller.
const ClientName = "kubevirt.io:system:client:virt-handler"

// ServerName is the name every handler's serving certificate carries in
// namespace, whatever address virt-api dials: a certificate for a node's
// own address could be had by anyone who controls that node.
func ServerName(namespace string) string { return "virt-handler." + namespace + ".svc" }

// PortName names the node API's port in the handler's pod.
const PortName = "node-api"
