package network_test

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/network"
)

// Plan a VMI's masquerade interface on the pod's eth0 (as Discover finds
// it). Setup, StartDHCP and Teardown on a Configurator (virt/network/netns.NetNS,
// or a network.Fake)
// then perform the plan.
func ExampleMakePlan() {
	vmi := &virtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "vm1", Namespace: "default"}}
	vmi.Spec.Networks = []virtv1.Network{*virtv1.DefaultPodNetwork()}
	vmi.Spec.Domain.Devices.Interfaces = []virtv1.Interface{{
		Name:                   "default",
		InterfaceBindingMethod: virtv1.InterfaceBindingMethod{Masquerade: &virtv1.InterfaceMasquerade{}},
		Ports:                  []virtv1.Port{{Port: 80}},
	}}
	pod := []network.PodInterface{{Name: "eth0", MAC: "0a:58:0a:f4:00:07", IPs: []string{"10.244.0.7/24"}, MTU: 1450}}

	plan, err := network.MakePlan(vmi, pod, network.WithDNS(network.DNS{Servers: []string{"10.96.0.10"}}))
	if err != nil {
		fmt.Println(err)
		return
	}
	p := plan["default"]
	fmt.Println(p.Binding, p.TapName, p.Bridge, p.GuestIPs, p.Gateways, p.MTU, p.Ports)

	vmi.Spec.Domain.Devices.Interfaces[0].Ports[0].Port = 70000
	_, err = network.MakePlan(vmi, pod)
	fmt.Println(err)
	// Output:
	// masquerade tap0 k6t-eth0 [10.0.2.2/24] [10.0.2.1] 1450 [{TCP 80}]
	// spec.domain.devices.interfaces[0].ports[0].port: 70000 is out of range 1-65535
}
