package node

import "context"

// Network gives pods their network: a network namespace connected to the
// node's pod network. The host implementation is [CNI]; local/node/nodefake
// has a fake.
type Network interface {
	// Setup creates the pod's network namespace and connects it. A
	// namespace left from an earlier, failed attempt is replaced.
	Setup(ctx context.Context, pod PodNetwork) (Attachment, error)
	// Teardown disconnects and removes the pod's network namespace; it is
	// idempotent and also cleans up after a node that died mid-way.
	Teardown(ctx context.Context, pod PodNetwork) error
}

// PodNetwork names a pod to its network.
type PodNetwork struct {
	// ID is unique per pod (its UID); Namespace and Name are the pod's.
	ID, Namespace, Name string
	// Dir is the pod's folder on the node, where the network may keep its
	// namespace file.
	Dir string
	// Secondary are the networks the pod joins besides its own (its
	// Multus annotation, resolved); Teardown does not need them.
	Secondary []SecondaryNetwork
}

// Attachment is a connected pod network.
type Attachment struct {
	// NetNS is the network namespace file the pod's processes join.
	NetNS string
	// IPs are the pod's addresses, IPv4 first.
	IPs []string
}
