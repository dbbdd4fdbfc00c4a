package devices

import (
	"os"
	"strings"

	"github.com/virtkit/virtkit/virt/launcher/contract"
)

// The resources of the devices KubeVirt's launcher pods request.
const (
	KVM      = contract.KVMResource
	Tun      = contract.TunResource
	VhostNet = contract.VhostNetResource
)

// DefaultCount is how many pods may hold a device at once, as KubeVirt
// offers them.
const DefaultCount = 1000

// Device is one host device node offered as an extended resource.
type Device struct {
	// Resource is the extended resource's name, such as KVM.
	Resource string
	// Path is the device node on the host and in the container.
	Path string
	// Count is how many pods may hold it at once.
	Count int
}

// Name is the resource's name without its domain ("kvm").
func (d Device) Name() string {
	_, n, _ := strings.Cut(d.Resource, "/")
	return n
}

// NodeFacts is what ForNode needs of a node.
type NodeFacts struct {
	// KVMPresent says /dev/kvm exists.
	KVMPresent bool
	// KVMOff turns KVM off for the node: by the handler's setting or the
	// KubeVirt CR's useEmulation. Guests then run under software emulation.
	KVMOff bool
}

// HostFacts reads NodeFacts of this host; kvmOff as the caller's
// configuration says.
func HostFacts(kvmOff bool) NodeFacts {
	_, err := os.Stat("/dev/kvm")
	return NodeFacts{KVMPresent: err == nil, KVMOff: kvmOff}
}

// ForNode lists the devices a node offers: tun and vhost-net always, kvm
// only when it is present and not turned off (a VMI that needs KVM then
// stays Pending on such nodes, and only emulated ones are placed there).
func ForNode(f NodeFacts) []Device {
	var out []Device
	if f.KVMPresent && !f.KVMOff {
		out = append(out, Device{Resource: KVM, Path: "/dev/kvm", Count: DefaultCount})
	}
	return append(out,
		Device{Resource: Tun, Path: "/dev/net/tun", Count: DefaultCount},
		Device{Resource: VhostNet, Path: "/dev/vhost-net", Count: DefaultCount},
	)
}
