package netns_test

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
)

func vmiWith(ifaces []virtv1.Interface, nets []virtv1.Network, mutate ...func(*virtv1.VirtualMachineInstance)) *virtv1.VirtualMachineInstance {
	vmi := &virtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "vm1", Namespace: "ns1"}}
	vmi.Spec.Domain.Devices.Interfaces = ifaces
	vmi.Spec.Networks = nets
	for _, m := range mutate {
		m(vmi)
	}
	return vmi
}

func masq(name string, ports ...virtv1.Port) virtv1.Interface {
	return virtv1.Interface{Name: name, Ports: ports, InterfaceBindingMethod: virtv1.InterfaceBindingMethod{Masquerade: &virtv1.InterfaceMasquerade{}}}
}

func bridge(name string) virtv1.Interface {
	return virtv1.Interface{Name: name, InterfaceBindingMethod: virtv1.InterfaceBindingMethod{Bridge: &virtv1.InterfaceBridge{}}}
}

func podNetwork(name string) virtv1.Network {
	return virtv1.Network{Name: name, NetworkSource: virtv1.NetworkSource{Pod: &virtv1.PodNetwork{}}}
}

func multus(name string) virtv1.Network {
	return virtv1.Network{Name: name, NetworkSource: virtv1.NetworkSource{Multus: &virtv1.MultusNetwork{NetworkName: "nad-" + name}}}
}
