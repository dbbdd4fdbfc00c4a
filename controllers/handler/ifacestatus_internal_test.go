package handler

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/guestagent"
)

type ifaceStatus = virtv1.VirtualMachineInstanceNetworkInterface

// The agent's view is merged into the domain's NICs as KubeVirt's handler
// merges it: per family, the pod's addresses stay unless the guest has
// none of that family; a masquerade NIC's link-local addresses stay out;
// the guest's other NICs follow, at most ten.
func TestMergeGuestInterfaces(t *testing.T) {
	spec := []virtv1.Interface{
		{Name: "default", InterfaceBindingMethod: virtv1.InterfaceBindingMethod{Masquerade: &virtv1.InterfaceMasquerade{}}},
		{Name: "blue", InterfaceBindingMethod: virtv1.InterfaceBindingMethod{Bridge: &virtv1.InterfaceBridge{}}},
	}
	domainIfaces := func() []ifaceStatus {
		return []ifaceStatus{
			{Name: "default", MAC: "02:00:00:00:00:01", IP: "10.244.0.5", IPs: []string{"10.244.0.5", "fd00::5"}, InfoSource: InfoSourceDomain, PodInterfaceName: "eth0"},
			{Name: "blue", MAC: "02:00:00:00:00:02", InfoSource: InfoSourceDomain, PodInterfaceName: "pod16477688c0e"},
		}
	}
	many := func(n int) []guestagent.Interface {
		var out []guestagent.Interface
		for i := range n {
			out = append(out, guestagent.Interface{Name: fmt.Sprintf("vlan%d", i), MAC: fmt.Sprintf("02:00:00:00:01:%02x", i)})
		}
		return out
	}
	for _, c := range []struct {
		name  string
		guest []guestagent.Interface
		want  []ifaceStatus
	}{{
		name:  "the pod's addresses stay; the guest's masquerade link-local address stays out; a layer 2 NIC gets the guest's",
		guest: []guestagent.Interface{{Name: "eth0", MAC: "02:00:00:00:00:01", IPs: []string{"10.0.2.2", "fd10:0:2::2", "fe80::1"}}, {Name: "eth1", MAC: "02:00:00:00:00:02", IPs: []string{"192.168.7.9", "fe80::2"}}},
		want: []ifaceStatus{
			{Name: "default", MAC: "02:00:00:00:00:01", IP: "10.244.0.5", IPs: []string{"10.244.0.5", "fd00::5"}, InfoSource: InfoSourceDomainAndGA, InterfaceName: "eth0", PodInterfaceName: "eth0"},
			{Name: "blue", MAC: "02:00:00:00:00:02", IP: "192.168.7.9", IPs: []string{"192.168.7.9", "fe80::2"}, InfoSource: InfoSourceDomainAndGA, InterfaceName: "eth1", PodInterfaceName: "pod16477688c0e"},
		},
	}, {
		name:  "a family the guest has no address of goes",
		guest: []guestagent.Interface{{Name: "eth0", MAC: "02:00:00:00:00:01", IPs: []string{"10.0.2.2"}}},
		want: []ifaceStatus{
			{Name: "default", MAC: "02:00:00:00:00:01", IP: "10.244.0.5", IPs: []string{"10.244.0.5"}, InfoSource: InfoSourceDomainAndGA, InterfaceName: "eth0", PodInterfaceName: "eth0"},
			{Name: "blue", MAC: "02:00:00:00:00:02", InfoSource: InfoSourceDomain, PodInterfaceName: "pod16477688c0e"},
		},
	}, {
		name:  "the guest's own NICs follow, ten at most",
		guest: many(12),
		want: append(domainIfaces(), func() []ifaceStatus {
			var out []ifaceStatus
			for _, g := range many(10) {
				out = append(out, ifaceStatus{MAC: g.MAC, InterfaceName: g.Name, InfoSource: InfoSourceGuestAgent})
			}
			return out
		}()...),
	}} {
		t.Run(c.name, func(t *testing.T) {
			got := mergeGuestInterfaces(domainIfaces(), c.guest, spec)
			if d := cmp.Diff(c.want, got); d != "" {
				t.Errorf("merged (-want +got):\n%s", d)
			}
		})
	}
}

// A restarted handler that has not asked the agent yet keeps what the
// agent had added.
func TestCarryGuestInterfaces(t *testing.T) {
	prev := []ifaceStatus{
		{Name: "blue", MAC: "02:00:00:00:00:02", IP: "192.168.7.9", IPs: []string{"192.168.7.9"}, InfoSource: InfoSourceDomainAndGA, InterfaceName: "eth1"},
		{MAC: "02:00:00:00:01:00", InterfaceName: "vlan0", InfoSource: InfoSourceGuestAgent},
	}
	got := carryGuestInterfaces([]ifaceStatus{{Name: "blue", MAC: "02:00:00:00:00:02", InfoSource: InfoSourceDomain}}, prev)
	if d := cmp.Diff(prev, got); d != "" {
		t.Errorf("carried (-want +got):\n%s", d)
	}
}
