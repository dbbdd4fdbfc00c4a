package network_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/network"
)

// The launcher pod's Multus annotation lists the secondary networks in
// spec order with the interface the planner looks for, in the VMI's
// namespace unless the network names another; a VMI on the pod network
// alone has none.
func TestMultusNetworks(t *testing.T) {
	multus := func(name, nad string, def bool) virtv1.Network {
		return virtv1.Network{Name: name, NetworkSource: virtv1.NetworkSource{Multus: &virtv1.MultusNetwork{NetworkName: nad, Default: def}}}
	}
	pod := virtv1.Network{Name: "default", NetworkSource: virtv1.NetworkSource{Pod: &virtv1.PodNetwork{}}}
	for _, c := range []struct {
		name     string
		networks []virtv1.Network
		want     string
		names    map[string]string
	}{
		{"pod network only", []virtv1.Network{pod}, "", map[string]string{"default": "eth0"}},
		{"two secondary networks", []virtv1.Network{pod, multus("a", "bridge-a", false), multus("b", "other/bridge-b", false)},
			`[{"name":"bridge-a","namespace":"ns","interface":"podca978112ca1"},{"name":"bridge-b","namespace":"other","interface":"pod3e23e816003"}]`,
			map[string]string{"default": "eth0", "a": "podca978112ca1", "b": "pod3e23e816003"}},
		{"an interface being unplugged leaves the pod's networks", []virtv1.Network{pod, multus("a", "bridge-a", false), multus("gone", "bridge-b", false)},
			`[{"name":"bridge-a","namespace":"ns","interface":"podca978112ca1"}]`,
			map[string]string{"default": "eth0", "a": "podca978112ca1", "gone": network.SecondaryPodInterfaceName("gone")}},
		{"a default Multus network is the pod's own", []virtv1.Network{multus("main", "main-net", true), multus("a", "bridge-a", false)},
			`[{"name":"bridge-a","namespace":"ns","interface":"podca978112ca1"}]`, map[string]string{"main": "eth0", "a": "podca978112ca1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			vmi := &virtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vm"}, Spec: virtv1.VirtualMachineInstanceSpec{Networks: c.networks}}
			for _, n := range c.networks {
				vmi.Spec.Domain.Devices.Interfaces = append(vmi.Spec.Domain.Devices.Interfaces, virtv1.Interface{Name: n.Name,
					InterfaceBindingMethod: virtv1.InterfaceBindingMethod{Bridge: &virtv1.InterfaceBridge{}}})
				if n.Name == "gone" {
					vmi.Spec.Domain.Devices.Interfaces[len(vmi.Spec.Domain.Devices.Interfaces)-1].State = virtv1.InterfaceStateAbsent
				}
			}
			if got := network.MultusNetworks(vmi); got != c.want {
				t.Errorf("MultusNetworks = %s, want %s", got, c.want)
			}
			if d := cmp.Diff(c.names, network.PodInterfaceNames(c.networks)); d != "" {
				t.Errorf("PodInterfaceNames (-want +got):\n%s", d)
			}
		})
	}
}

// Secondary pod interfaces have KubeVirt's hashed names (the values are
// KubeVirt's own test's), whatever the network's place in the spec.
func TestSecondaryPodInterfaceName(t *testing.T) {
	for name, want := range map[string]string{"network1": "poda7662f44d65", "network2": "pod27f4a77f94e"} {
		if got := network.SecondaryPodInterfaceName(name); got != want {
			t.Errorf("SecondaryPodInterfaceName(%q) = %s, want %s", name, got, want)
		}
	}
}
