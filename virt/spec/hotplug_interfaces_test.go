package spec_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/spec"
)

func bridgeIface(name string, state virtv1.InterfaceState) virtv1.Interface {
	return virtv1.Interface{Name: name, State: state, InterfaceBindingMethod: virtv1.InterfaceBindingMethod{Bridge: &virtv1.InterfaceBridge{}}}
}

func masqIface(name string) virtv1.Interface {
	return virtv1.Interface{Name: name, InterfaceBindingMethod: virtv1.InterfaceBindingMethod{Masquerade: &virtv1.InterfaceMasquerade{}}}
}

func podNet(name string) virtv1.Network {
	return virtv1.Network{Name: name, NetworkSource: virtv1.NetworkSource{Pod: &virtv1.PodNetwork{}}}
}

func multusNet(name, nad string) virtv1.Network {
	return virtv1.Network{Name: name, NetworkSource: virtv1.NetworkSource{Multus: &virtv1.MultusNetwork{NetworkName: nad}}}
}

func netSpec(ifaces []virtv1.Interface, nets ...virtv1.Network) *virtv1.VirtualMachineInstanceSpec {
	s := &virtv1.VirtualMachineInstanceSpec{Networks: nets}
	s.Domain.Devices.Interfaces = ifaces
	return s
}

func statusOf(names ...string) []virtv1.VirtualMachineInstanceNetworkInterface {
	var out []virtv1.VirtualMachineInstanceNetworkInterface
	for _, n := range names {
		out = append(out, virtv1.VirtualMachineInstanceNetworkInterface{Name: n})
	}
	return out
}

// The template's bridge interfaces on secondary networks reach the running
// VMI with their networks, its absent ones are set absent there, and an
// absent one leaves once the status no longer lists it; what cannot be
// hotplugged is left alone.
func TestDeclaredInterfaces(t *testing.T) {
	running := netSpec([]virtv1.Interface{masqIface("default"), bridgeIface("blue", "")}, podNet("default"), multusNet("blue", "blue-net"))
	for _, c := range []struct {
		name       string
		tmpl, cur  *virtv1.VirtualMachineInstanceSpec
		status     []virtv1.VirtualMachineInstanceNetworkInterface
		want       *virtv1.VirtualMachineInstanceSpec
		wantChange bool
	}{{
		name:   "no change",
		tmpl:   running,
		cur:    running,
		status: statusOf("default", "blue"),
		want:   running,
	}, {
		name: "a bridge interface on a secondary network is plugged",
		tmpl: netSpec([]virtv1.Interface{masqIface("default"), bridgeIface("blue", ""), bridgeIface("red", "")},
			podNet("default"), multusNet("blue", "blue-net"), multusNet("red", "red-net")),
		cur:    running,
		status: statusOf("default", "blue"),
		want: netSpec([]virtv1.Interface{masqIface("default"), bridgeIface("blue", ""), bridgeIface("red", "")},
			podNet("default"), multusNet("blue", "blue-net"), multusNet("red", "red-net")),
		wantChange: true,
	}, {
		name: "a masquerade interface is not hotplugged",
		tmpl: netSpec([]virtv1.Interface{masqIface("default"), bridgeIface("blue", ""), masqIface("red")},
			podNet("default"), multusNet("blue", "blue-net"), multusNet("red", "red-net")),
		cur:    running,
		status: statusOf("default", "blue"),
		want:   running,
	}, {
		name:       "an absent interface is unplugged",
		tmpl:       netSpec([]virtv1.Interface{masqIface("default"), bridgeIface("blue", virtv1.InterfaceStateAbsent)}, podNet("default"), multusNet("blue", "blue-net")),
		cur:        running,
		status:     statusOf("default", "blue"),
		want:       netSpec([]virtv1.Interface{masqIface("default"), bridgeIface("blue", virtv1.InterfaceStateAbsent)}, podNet("default"), multusNet("blue", "blue-net")),
		wantChange: true,
	}, {
		name:       "an unplugged interface leaves with its network once the status lets go",
		tmpl:       netSpec([]virtv1.Interface{masqIface("default"), bridgeIface("blue", virtv1.InterfaceStateAbsent)}, podNet("default"), multusNet("blue", "blue-net")),
		cur:        netSpec([]virtv1.Interface{masqIface("default"), bridgeIface("blue", virtv1.InterfaceStateAbsent)}, podNet("default"), multusNet("blue", "blue-net")),
		status:     statusOf("default"),
		want:       netSpec([]virtv1.Interface{masqIface("default")}, podNet("default")),
		wantChange: true,
	}} {
		t.Run(c.name, func(t *testing.T) {
			ifaces, nets, changed := spec.DeclaredInterfaces(c.tmpl, c.cur, c.status)
			if changed != c.wantChange {
				t.Errorf("changed = %v, want %v", changed, c.wantChange)
			}
			if d := cmp.Diff(c.want, netSpec(ifaces, nets...)); d != "" {
				t.Errorf("VMI interfaces and networks (-want +got):\n%s", d)
			}
		})
	}
}

// An absent interface leaves the template once the VMI has neither it nor
// its status; with no VMI at once.
func TestUnpluggedFromTemplate(t *testing.T) {
	tmpl := netSpec([]virtv1.Interface{masqIface("default"), bridgeIface("blue", virtv1.InterfaceStateAbsent)}, podNet("default"), multusNet("blue", "blue-net"))
	if _, _, changed := spec.UnpluggedFromTemplate(tmpl, tmpl, statusOf("default", "blue")); changed {
		t.Error("an interface the VMI still has left the template")
	}
	ifaces, nets, changed := spec.UnpluggedFromTemplate(tmpl, netSpec([]virtv1.Interface{masqIface("default")}, podNet("default")), statusOf("default"))
	if !changed {
		t.Fatal("an unplugged interface stayed in the template")
	}
	if d := cmp.Diff(netSpec([]virtv1.Interface{masqIface("default")}, podNet("default")), netSpec(ifaces, nets...)); d != "" {
		t.Errorf("template (-want +got):\n%s", d)
	}
	if _, _, changed := spec.UnpluggedFromTemplate(tmpl, nil, nil); !changed {
		t.Error("a stopped VM kept an absent interface")
	}
}

// A restart is needed when the template drops or changes what the VMI has
// rather than hotplugging; adding, or setting absent, is hotplug's.
func TestInterfacesNeedRestart(t *testing.T) {
	cur := netSpec([]virtv1.Interface{masqIface("default"), bridgeIface("blue", "")}, podNet("default"), multusNet("blue", "blue-net"))
	changedModel := bridgeIface("blue", "")
	changedModel.Model = "e1000e"
	defaulted := netSpec([]virtv1.Interface{masqIface("default"), bridgeIface("blue", "")}, podNet("default"), multusNet("blue", "blue-net"))
	for i := range defaulted.Domain.Devices.Interfaces {
		defaulted.Domain.Devices.Interfaces[i].Model = virtv1.VirtIO
	}
	for _, c := range []struct {
		name string
		tmpl *virtv1.VirtualMachineInstanceSpec
		want bool
	}{
		{"the same", cur, false},
		{"the same but the defaulted model", defaulted, false},
		{"one added", netSpec([]virtv1.Interface{masqIface("default"), bridgeIface("blue", ""), bridgeIface("red", "")},
			podNet("default"), multusNet("blue", "blue-net"), multusNet("red", "red-net")), false},
		{"one set absent", netSpec([]virtv1.Interface{masqIface("default"), bridgeIface("blue", virtv1.InterfaceStateAbsent)}, podNet("default"), multusNet("blue", "blue-net")), false},
		{"one dropped", netSpec([]virtv1.Interface{masqIface("default")}, podNet("default")), true},
		{"one changed", netSpec([]virtv1.Interface{masqIface("default"), changedModel}, podNet("default"), multusNet("blue", "blue-net")), true},
		{"a network changed", netSpec([]virtv1.Interface{masqIface("default"), bridgeIface("blue", "")}, podNet("default"), multusNet("blue", "other-net")), true},
	} {
		if got := spec.InterfacesNeedRestart(c.tmpl, cur); got != c.want {
			t.Errorf("%s: InterfacesNeedRestart = %v, want %v", c.name, got, c.want)
		}
	}
}
