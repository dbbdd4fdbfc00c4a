package admission

import (
	"testing"

	virtv1 "kubevirt.io/api/core/v1"
)

// The VM controller may hotplug a bridge interface with its secondary
// network, set one absent and then drop it; any other change of a running
// VMI's interfaces or networks is refused with its field.
func TestLiveInterfaces(t *testing.T) {
	bridge := func(name string, state virtv1.InterfaceState) virtv1.Interface {
		return virtv1.Interface{Name: name, State: state, InterfaceBindingMethod: virtv1.InterfaceBindingMethod{Bridge: &virtv1.InterfaceBridge{}}}
	}
	masq := virtv1.Interface{Name: "default", InterfaceBindingMethod: virtv1.InterfaceBindingMethod{Masquerade: &virtv1.InterfaceMasquerade{}}}
	pod := virtv1.Network{Name: "default", NetworkSource: virtv1.NetworkSource{Pod: &virtv1.PodNetwork{}}}
	multus := func(name, nad string) virtv1.Network {
		return virtv1.Network{Name: name, NetworkSource: virtv1.NetworkSource{Multus: &virtv1.MultusNetwork{NetworkName: nad}}}
	}
	specOf := func(ifaces []virtv1.Interface, nets ...virtv1.Network) *virtv1.VirtualMachineInstanceSpec {
		s := &virtv1.VirtualMachineInstanceSpec{Networks: nets}
		s.Domain.Devices.Interfaces = ifaces
		return s
	}
	base := specOf([]virtv1.Interface{masq, bridge("blue", "")}, pod, multus("blue", "blue-net"))
	redMasq := virtv1.Interface{Name: "red", InterfaceBindingMethod: virtv1.InterfaceBindingMethod{Masquerade: &virtv1.InterfaceMasquerade{}}}
	for _, c := range []struct {
		name      string
		from, to  *virtv1.VirtualMachineInstanceSpec
		wantField string
	}{
		{"plug a bridge interface with its network", base,
			specOf([]virtv1.Interface{masq, bridge("blue", ""), bridge("red", "")}, pod, multus("blue", "blue-net"), multus("red", "red-net")), ""},
		{"unplug", base, specOf([]virtv1.Interface{masq, bridge("blue", virtv1.InterfaceStateAbsent)}, pod, multus("blue", "blue-net")), ""},
		{"drop an unplugged interface", specOf([]virtv1.Interface{masq, bridge("blue", virtv1.InterfaceStateAbsent)}, pod, multus("blue", "blue-net")),
			specOf([]virtv1.Interface{masq}, pod), ""},
		{"plug a masquerade interface", base,
			specOf([]virtv1.Interface{masq, bridge("blue", ""), redMasq}, pod, multus("blue", "blue-net"), multus("red", "red-net")), "spec.domain.devices.interfaces[2]"},
		{"plug without a network", base,
			specOf([]virtv1.Interface{masq, bridge("blue", ""), bridge("red", "")}, pod, multus("blue", "blue-net")), "spec.domain.devices.interfaces[2]"},
		{"drop an interface that is not unplugged", base, specOf([]virtv1.Interface{masq}, pod), "spec.domain.devices.interfaces"},
		{"bring an unplugged interface back", specOf([]virtv1.Interface{masq, bridge("blue", virtv1.InterfaceStateAbsent)}, pod, multus("blue", "blue-net")),
			base, "spec.domain.devices.interfaces[1].state"},
		{"change a network", base, specOf([]virtv1.Interface{masq, bridge("blue", "")}, pod, multus("blue", "other-net")), "spec.networks[1]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			errs := liveChanges(c.from, c.to, nil)
			switch {
			case c.wantField == "" && len(errs) > 0:
				t.Errorf("refused: %v", errs.ToAggregate())
			case c.wantField != "" && len(errs) == 0:
				t.Errorf("allowed, want a refusal at %s", c.wantField)
			case c.wantField != "" && errs[0].Field != c.wantField:
				t.Errorf("refused at %s (%v), want %s", errs[0].Field, errs.ToAggregate(), c.wantField)
			}
		})
	}
}
