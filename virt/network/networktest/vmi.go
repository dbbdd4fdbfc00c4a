package networktest

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
)

// VMIWith is a VMI ns1/vm1 with ifaces and nets, changed by mutate: the
// input of the planner's tests and of the real namespace's.
func VMIWith(ifaces []virtv1.Interface, nets []virtv1.Network, mutate ...func(*virtv1.VirtualMachineInstance)) *virtv1.VirtualMachineInstance {
	vmi := &virtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "vm1", Namespace: "ns1"}}
	vmi.Spec.Domain.Devices.Interfaces = ifaces
	vmi.Spec.Networks = nets
	for _, m := range mutate {
		m(vmi)
	}
	return vmi
}

// Masquerade is an interface with the masquerade binding, forwarding ports.
func Masquerade(name string, ports ...virtv1.Port) virtv1.Interface {
	return virtv1.Interface{Name: name, Ports: ports, InterfaceBindingMethod: virtv1.InterfaceBindingMethod{Masquerade: &virtv1.InterfaceMasquerade{}}}
}

// Bridge is an interface with the bridge binding.
func Bridge(name string) virtv1.Interface {
	return virtv1.Interface{Name: name, InterfaceBindingMethod: virtv1.InterfaceBindingMethod{Bridge: &virtv1.InterfaceBridge{}}}
}

// PodNetwork is a network on the pod's network.
func PodNetwork(name string) virtv1.Network {
	return virtv1.Network{Name: name, NetworkSource: virtv1.NetworkSource{Pod: &virtv1.PodNetwork{}}}
}

// Multus is a secondary network from the NetworkAttachmentDefinition nad-NAME.
func Multus(name string) virtv1.Network {
	return virtv1.Network{Name: name, NetworkSource: virtv1.NetworkSource{Multus: &virtv1.MultusNetwork{NetworkName: "nad-" + name}}}
}
