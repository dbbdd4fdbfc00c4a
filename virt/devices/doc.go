// Package devices serves the kubelet's device plugin API (v1beta1) for the
// host devices a launcher pod asks for: devices.kubevirt.io/kvm
// (/dev/kvm), devices.kubevirt.io/tun (/dev/net/tun) and
// devices.kubevirt.io/vhost-net (/dev/vhost-net), as KubeVirt's virt-handler
// does, so that launcher pods that request them schedule on real nodes and
// get the device nodes in their containers.
//
// [ForNode] decides which devices a node offers (plain data: KVM only when
// /dev/kvm exists and KVM is not turned off); a [Plugin] serves one of them
// on a unix socket in the kubelet's device plugin folder, registers with the
// kubelet, and registers again when the kubelet restarts (it removes every
// socket of the folder when it does). Each device is offered [DefaultCount]
// times: any number of pods may share a device node.
//
// The package owns its sockets in the plugin folder; it does not create or
// change device nodes.
package devices
