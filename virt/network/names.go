package network

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	virtv1 "kubevirt.io/api/core/v1"
)

// The names of a guest's links in its launcher pod, as KubeVirt names them,
// so that a pod KubeVirt's tooling inspects looks the same, and so that no
// name depends on another network's place in the spec: a network added to
// or removed from a running VM renames nothing.
const (
	// PodInterfaceName is the pod network's interface in the launcher pod.
	PodInterfaceName = "eth0"
	// secondaryPrefix starts a secondary network's pod interface name.
	secondaryPrefix = "pod"
	// hashLen is how many hex digits of the network name's SHA-256 follow
	// secondaryPrefix: 15 (the kernel's limit) less "-nic", the longest
	// suffix KubeVirt puts on one.
	hashLen = 11
	// primaryTap is the pod network's tap.
	primaryTap = "tap0"
)

// SecondaryPodInterfaceName is the launcher pod's interface for the
// secondary (Multus, not default) network named network: "pod" and the
// first 11 hex digits of the name's SHA-256, KubeVirt's hashed naming.
func SecondaryPodInterfaceName(network string) string {
	sum := sha256.Sum256([]byte(network))
	return secondaryPrefix + hex.EncodeToString(sum[:])[:hashLen]
}

// PodInterfaceNames maps each network of networks to its interface in the
// launcher pod: the pod network (or a Multus network with default: true)
// to PodInterfaceName, every other Multus network to
// SecondaryPodInterfaceName. A network with neither source has none.
func PodInterfaceNames(networks []virtv1.Network) map[string]string {
	out := map[string]string{}
	for _, n := range networks {
		if _, dup := out[n.Name]; dup {
			continue
		}
		switch {
		case n.Pod != nil, n.Multus != nil && n.Multus.Default:
			out[n.Name] = PodInterfaceName
		case n.Multus != nil:
			out[n.Name] = SecondaryPodInterfaceName(n.Name)
		}
	}
	return out
}

// tapName is the tap of the guest NIC on pod interface podIface: tap0 on
// the pod network, "tap" and the hash on a secondary one.
func tapName(podIface string) string {
	if hash, ok := strings.CutPrefix(podIface, secondaryPrefix); ok && podIface != PodInterfaceName {
		return "tap" + hash
	}
	return primaryTap
}

// bridgeName is the in-pod bridge of the guest NIC on pod interface
// podIface: "k6t-" and the interface's name without "pod".
func bridgeName(podIface string) string {
	return "k6t-" + strings.TrimPrefix(podIface, secondaryPrefix)
}
