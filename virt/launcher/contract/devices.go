package contract

// Extended resources a launcher pod asks the kubelet for, served by the
// handler's device plugins (virt/devices), as KubeVirt names them.
const (
	// KVMResource is /dev/kvm, for guests that are not emulated.
	KVMResource = "devices.kubevirt.io/kvm"
	// TunResource is /dev/net/tun, through which QEMU opens the tap the
	// handler made in the pod.
	TunResource = "devices.kubevirt.io/tun"
	// VhostNetResource is /dev/vhost-net, which moves virtio-net's packets
	// in the host kernel under KVM.
	VhostNetResource = "devices.kubevirt.io/vhost-net"
)
