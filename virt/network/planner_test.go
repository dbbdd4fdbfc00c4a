package network_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gotest.tools/v3/assert"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/network"
	"github.com/virtkit/virtkit/virt/network/networktest"
)

var podEth0 = network.PodInterface{
	Name:   "eth0",
	MAC:    "0a:58:0a:63:00:05",
	IPs:    []string{"10.99.0.5/24", "fd00:99::5/64"},
	Routes: []network.Route{{Dst: "0.0.0.0/0", Gateway: "10.99.0.1"}, {Dst: "10.96.0.0/12", Gateway: "10.99.0.254"}},
	MTU:    1450,
}

var podEth0v4 = network.PodInterface{Name: "eth0", MAC: "0a:58:0a:63:00:05", IPs: []string{"10.99.0.5/24", "fe80::858:aff:fe63:5/64"}, MTU: 1450}

var podNet1 = network.PodInterface{Name: "pod16477688c0e", MAC: "0a:58:0a:64:00:07", IPs: []string{"10.100.0.7/16"}, MTU: 1500}

func withMAC(i virtv1.Interface, mac string) virtv1.Interface {
	i.MacAddress = mac
	return i
}

func TestMakePlan(t *testing.T) {
	dns := network.DNS{Servers: []string{"10.96.0.10"}, Search: []string{"ns1.svc.cluster.local"}}
	tests := []struct {
		name string
		vmi  *virtv1.VirtualMachineInstance
		pod  []network.PodInterface
		want network.Plan
	}{{
		name: "masquerade on a dual-stack pod network: KubeVirt's 10.0.2.0/24, fd10:0:2::/64 by SLAAC (EUI-64 of the MAC)",
		vmi:  networktest.VMIWith([]virtv1.Interface{networktest.Masquerade("default", virtv1.Port{Port: 80}, virtv1.Port{Protocol: "udp", Port: 53})}, []virtv1.Network{networktest.PodNetwork("default")}),
		pod:  []network.PodInterface{podEth0},
		want: network.Plan{"default": {
			Interface: "default", Network: "default", Binding: network.BindingMasquerade,
			TapName: "tap0", Bridge: "k6t-eth0", MAC: "02:a7:91:b5:03:c8", MTU: 1450,
			GuestIPs: []string{"10.0.2.2/24", "fd10:0:2:0:a7:91ff:feb5:3c8/64"}, Gateways: []string{"10.0.2.1", "fe80::1"},
			BridgeIPs: []string{"10.0.2.1/24", "fd10:0:2::1/64", "fe80::1/64"},
			Ports:     []network.Port{{Protocol: "TCP", Port: 80}, {Protocol: "UDP", Port: 53}},
			DNS:       dns, Pod: podEth0, Hostname: "vm1",
		}},
	}, {
		name: "masquerade with its own CIDR, MAC and multi-queue",
		vmi: networktest.VMIWith([]virtv1.Interface{withMAC(networktest.Masquerade("default"), "02:00:00:00:00:AA")},
			[]virtv1.Network{{Name: "default", NetworkSource: virtv1.NetworkSource{Pod: &virtv1.PodNetwork{VMNetworkCIDR: "192.168.7.0/28", VMIPv6NetworkCIDR: "fd00:7:0:1::/64"}}}},
			func(v *virtv1.VirtualMachineInstance) {
				v.Spec.Domain.Devices.NetworkInterfaceMultiQueue = new(bool)
				*v.Spec.Domain.Devices.NetworkInterfaceMultiQueue = true
				v.Spec.Domain.CPU = &virtv1.CPU{Cores: 2, Sockets: 2}
				v.Spec.Hostname = "web"
			}),
		pod: []network.PodInterface{podEth0},
		want: network.Plan{"default": {
			Interface: "default", Network: "default", Binding: network.BindingMasquerade,
			TapName: "tap0", Bridge: "k6t-eth0", MAC: "02:00:00:00:00:aa", MTU: 1450, Queues: 4,
			GuestIPs: []string{"192.168.7.2/28", "fd00:7:0:1:0:ff:fe00:aa/64"}, Gateways: []string{"192.168.7.1", "fe80::1"},
			BridgeIPs: []string{"192.168.7.1/28", "fd00:7:0:1::1/64", "fe80::1/64"},
			DNS:       dns, Pod: podEth0, Hostname: "web",
		}},
	}, {
		name: "masquerade on an IPv4-only pod network has no IPv6",
		vmi:  networktest.VMIWith([]virtv1.Interface{networktest.Masquerade("default")}, []virtv1.Network{networktest.PodNetwork("default")}),
		pod:  []network.PodInterface{podEth0v4},
		want: network.Plan{"default": {
			Interface: "default", Network: "default", Binding: network.BindingMasquerade,
			TapName: "tap0", Bridge: "k6t-eth0", MAC: "02:a7:91:b5:03:c8", MTU: 1450,
			GuestIPs: []string{"10.0.2.2/24"}, Gateways: []string{"10.0.2.1"}, BridgeIPs: []string{"10.0.2.1/24"},
			DNS: dns, Pod: podEth0v4, Hostname: "vm1",
		}},
	}, {
		name: "bridge on the pod network takes the pod's address, MAC, gateway and routes",
		vmi:  networktest.VMIWith([]virtv1.Interface{networktest.Bridge("default")}, []virtv1.Network{networktest.PodNetwork("default")}),
		pod:  []network.PodInterface{podEth0},
		want: network.Plan{"default": {
			Interface: "default", Network: "default", Binding: network.BindingBridge,
			TapName: "tap0", Bridge: "k6t-eth0", MAC: "0a:58:0a:63:00:05", MTU: 1450,
			GuestIPs: []string{"10.99.0.5/24"}, Gateways: []string{"10.99.0.1"},
			Routes:     []network.Route{{Dst: "10.96.0.0/12", Gateway: "10.99.0.254"}},
			PodPortMAC: "02:b1:1d:db:01:8c", DNS: dns, Pod: podEth0, Hostname: "vm1",
		}},
	}, {
		name: "a Multus network maps to its hashed pod interface and may be bridged",
		vmi:  networktest.VMIWith([]virtv1.Interface{networktest.Masquerade("default"), networktest.Bridge("blue")}, []virtv1.Network{networktest.PodNetwork("default"), networktest.Multus("blue")}),
		pod:  []network.PodInterface{podEth0, podNet1},
		want: network.Plan{
			"default": {
				Interface: "default", Network: "default", Binding: network.BindingMasquerade,
				TapName: "tap0", Bridge: "k6t-eth0", MAC: "02:a7:91:b5:03:c8", MTU: 1450,
				GuestIPs: []string{"10.0.2.2/24", "fd10:0:2:0:a7:91ff:feb5:3c8/64"}, Gateways: []string{"10.0.2.1", "fe80::1"},
				BridgeIPs: []string{"10.0.2.1/24", "fd10:0:2::1/64", "fe80::1/64"},
				DNS:       dns, Pod: podEth0, Hostname: "vm1",
			},
			"blue": {
				Interface: "blue", Network: "blue", Binding: network.BindingBridge,
				TapName: "tap16477688c0e", Bridge: "k6t-16477688c0e", MAC: "0a:58:0a:64:00:07", MTU: 1500,
				GuestIPs: []string{"10.100.0.7/16"}, PodPortMAC: "02:c3:24:cb:01:e1",
				DNS: dns, Pod: podNet1, Hostname: "vm1",
			},
		},
	}, {
		name: "an absent interface is not planned",
		vmi: networktest.VMIWith([]virtv1.Interface{networktest.Masquerade("default"), func() virtv1.Interface {
			i := networktest.Bridge("blue")
			i.State = virtv1.InterfaceStateAbsent
			return i
		}()}, []virtv1.Network{networktest.PodNetwork("default"), networktest.Multus("blue")}),
		pod: []network.PodInterface{podEth0},
		want: network.Plan{"default": {
			Interface: "default", Network: "default", Binding: network.BindingMasquerade,
			TapName: "tap0", Bridge: "k6t-eth0", MAC: "02:a7:91:b5:03:c8", MTU: 1450,
			GuestIPs: []string{"10.0.2.2/24", "fd10:0:2:0:a7:91ff:feb5:3c8/64"}, Gateways: []string{"10.0.2.1", "fe80::1"},
			BridgeIPs: []string{"10.0.2.1/24", "fd10:0:2::1/64", "fe80::1/64"},
			DNS:       dns, Pod: podEth0, Hostname: "vm1",
		}},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := network.MakePlan(tc.vmi, tc.pod, network.WithDNS(dns))
			assert.NilError(t, err)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("plan (-want +got):\n%s", d)
			}
		})
	}
}

func TestMakePlanRejects(t *testing.T) {
	tests := []struct {
		name string
		vmi  *virtv1.VirtualMachineInstance
		pod  []network.PodInterface
		want []string // error lines, in order
		kind error
	}{{
		name: "unknown network name",
		vmi:  networktest.VMIWith([]virtv1.Interface{networktest.Masquerade("default"), networktest.Bridge("red")}, []virtv1.Network{networktest.PodNetwork("default")}),
		pod:  []network.PodInterface{podEth0},
		want: []string{`spec.domain.devices.interfaces[1].name: no network named "red" in spec.networks`},
		kind: network.ErrInvalidSpec,
	}, {
		name: "masquerade on a Multus network",
		vmi:  networktest.VMIWith([]virtv1.Interface{networktest.Masquerade("blue")}, []virtv1.Network{networktest.Multus("blue")}),
		pod:  []network.PodInterface{podEth0, podNet1},
		want: []string{`spec.domain.devices.interfaces[0].masquerade: masquerade needs the pod network; network "blue" is a secondary Multus network`},
		kind: network.ErrInvalidSpec,
	}, {
		name: "duplicate MACs",
		vmi: networktest.VMIWith([]virtv1.Interface{withMAC(networktest.Masquerade("default"), "02:00:00:00:00:01"), withMAC(networktest.Bridge("blue"), "02:00:00:00:00:01")},
			[]virtv1.Network{networktest.PodNetwork("default"), networktest.Multus("blue")}),
		pod:  []network.PodInterface{podEth0, podNet1},
		want: []string{`spec.domain.devices.interfaces[1].macAddress: MAC 02:00:00:00:00:01 is also used by spec.domain.devices.interfaces[0]`},
		kind: network.ErrInvalidSpec,
	}, {
		name: "ports out of range, a bad protocol and a duplicate",
		vmi: networktest.VMIWith([]virtv1.Interface{networktest.Masquerade("default", virtv1.Port{Port: 0}, virtv1.Port{Port: 65536}, virtv1.Port{Port: 22, Protocol: "SCTP"},
			virtv1.Port{Port: 80}, virtv1.Port{Port: 80, Protocol: "tcp"})}, []virtv1.Network{networktest.PodNetwork("default")}),
		pod: []network.PodInterface{podEth0},
		want: []string{
			`spec.domain.devices.interfaces[0].ports[0].port: 0 is out of range 1-65535`,
			`spec.domain.devices.interfaces[0].ports[1].port: 65536 is out of range 1-65535`,
			`spec.domain.devices.interfaces[0].ports[2].protocol: "SCTP" is not TCP or UDP`,
			`spec.domain.devices.interfaces[0].ports[4]: TCP 80 is also forwarded by ports[3]`,
		},
		kind: network.ErrInvalidSpec,
	}, {
		name: "ports on a bridge binding",
		vmi: networktest.VMIWith([]virtv1.Interface{func() virtv1.Interface {
			i := networktest.Bridge("default")
			i.Ports = []virtv1.Port{{Port: 80}}
			return i
		}()}, []virtv1.Network{networktest.PodNetwork("default")}),
		pod:  []network.PodInterface{podEth0},
		want: []string{`spec.domain.devices.interfaces[0].ports: only the masquerade binding forwards ports`},
		kind: network.ErrInvalidSpec,
	}, {
		name: "unsupported binding",
		vmi: networktest.VMIWith([]virtv1.Interface{{Name: "default", InterfaceBindingMethod: virtv1.InterfaceBindingMethod{SRIOV: &virtv1.InterfaceSRIOV{}}}},
			[]virtv1.Network{networktest.PodNetwork("default")}),
		pod:  []network.PodInterface{podEth0},
		want: []string{`spec.domain.devices.interfaces[0].sriov: the SR-IOV binding is not supported`},
		kind: network.ErrUnsupported,
	}, {
		name: "pod interface missing",
		vmi:  networktest.VMIWith([]virtv1.Interface{networktest.Bridge("blue")}, []virtv1.Network{networktest.Multus("blue")}),
		pod:  []network.PodInterface{podEth0},
		want: []string{`spec.networks[0]: network "blue": pod interface pod16477688c0e not found (pod has eth0)`},
		kind: network.ErrNoPodInterface,
	}, {
		name: "masquerade without a pod IPv4 address",
		vmi:  networktest.VMIWith([]virtv1.Interface{networktest.Masquerade("default")}, []virtv1.Network{networktest.PodNetwork("default")}),
		pod:  []network.PodInterface{{Name: "eth0", MAC: "0a:58:00:00:00:01", IPs: []string{"fd00::5/64"}}},
		want: []string{`spec.domain.devices.interfaces[0].masquerade: pod interface eth0 has no IPv4 address to masquerade behind (an IPv6-only pod is not supported; dual stack is)`},
		kind: network.ErrInvalidSpec,
	}, {
		name: "bad masquerade CIDR and bad MAC",
		vmi: networktest.VMIWith([]virtv1.Interface{networktest.Masquerade("default"), withMAC(networktest.Bridge("blue"), "01:00:5e:00:00:01")},
			[]virtv1.Network{{Name: "default", NetworkSource: virtv1.NetworkSource{Pod: &virtv1.PodNetwork{VMNetworkCIDR: "10.0.2.0/31"}}}, networktest.Multus("blue")}),
		pod: []network.PodInterface{podEth0, podNet1},
		want: []string{
			`spec.networks[0].pod.vmNetworkCIDR: 10.0.2.0/31 has no room for a gateway and a guest (at most /30)`,
			`spec.domain.devices.interfaces[1].macAddress: 01:00:5e:00:00:01 is a multicast address`,
		},
		kind: network.ErrInvalidSpec,
	}, {
		name: "IPv6 masquerade CIDR: KubeVirt's /120 has no room for SLAAC",
		vmi: networktest.VMIWith([]virtv1.Interface{networktest.Masquerade("default")},
			[]virtv1.Network{{Name: "default", NetworkSource: virtv1.NetworkSource{Pod: &virtv1.PodNetwork{VMIPv6NetworkCIDR: "fd10:0:2::/120"}}}}),
		pod: []network.PodInterface{podEth0},
		want: []string{
			`spec.networks[0].pod.vmIPv6NetworkCIDR: fd10:0:2::/120 is not a /64: the guest configures its IPv6 address from router advertisements (SLAAC), which needs a /64`,
		},
		kind: network.ErrInvalidSpec,
	}, {
		name: "IPv6 masquerade CIDR that is IPv4",
		vmi: networktest.VMIWith([]virtv1.Interface{networktest.Masquerade("default")},
			[]virtv1.Network{{Name: "default", NetworkSource: virtv1.NetworkSource{Pod: &virtv1.PodNetwork{VMIPv6NetworkCIDR: "10.0.0.0/8"}}}}),
		pod:  []network.PodInterface{podEth0},
		want: []string{`spec.networks[0].pod.vmIPv6NetworkCIDR: "10.0.0.0/8" is not an IPv6 CIDR`},
		kind: network.ErrInvalidSpec,
	}, {
		name: "a network no interface uses",
		vmi:  networktest.VMIWith([]virtv1.Interface{networktest.Masquerade("default")}, []virtv1.Network{networktest.PodNetwork("default"), networktest.Multus("blue")}),
		pod:  []network.PodInterface{podEth0, podNet1},
		want: []string{`spec.networks[1]: no interface uses network "blue"`},
		kind: network.ErrInvalidSpec,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := network.MakePlan(tc.vmi, tc.pod)
			assert.Assert(t, err != nil, "no error; plan %+v", plan)
			assert.Assert(t, plan == nil)
			if d := cmp.Diff(tc.want, strings.Split(err.Error(), "\n")); d != "" {
				t.Errorf("errors (-want +got):\n%s", d)
			}
			assert.Assert(t, errors.Is(err, tc.kind), "%v is not %v", err, tc.kind)
			var fe *network.FieldError
			assert.Assert(t, errors.As(err, &fe))
		})
	}
}

// The plan is plain data: it survives JSON, so a restarted handler can
// tear down what an earlier one set up.
func TestPreviewMatchesPlanTaps(t *testing.T) {
	vmi := networktest.VMIWith([]virtv1.Interface{networktest.Masquerade("default"), networktest.Bridge("blue")}, []virtv1.Network{networktest.PodNetwork("default"), networktest.Multus("blue")})
	plan, err := network.MakePlan(vmi, []network.PodInterface{podEth0, podNet1})
	assert.NilError(t, err)
	preview := network.PreviewPlan(vmi)
	for name, p := range plan {
		assert.Equal(t, p.TapName, preview[name].TapName)
		assert.Equal(t, p.Binding, preview[name].Binding)
	}
	assert.Equal(t, plan["default"].MAC, preview["default"].MAC)
}
