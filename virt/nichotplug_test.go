package virt_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	virtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/virt/domain"
	"github.com/virtkit/virtkit/virt/network"
)

// A bridge interface on a secondary network is plugged into a running
// machine once the pod has its interface (before, the error says what is
// missing and nothing is set up), served by DHCP, and unplugged again; the
// defined domain has empty root ports for it.
func TestPlugAndUnplugInterface(t *testing.T) {
	m, f := newMachine(t)
	ctx := context.Background()
	assert.NilError(t, m.Start(ctx))
	defined, err := f.dom.XML(ctx, m.DomainName(), domain.XMLOptions{Inactive: true})
	assert.NilError(t, err)
	assert.Check(t, is.Equal(ports(defined), 8), "the defined domain's empty root ports")

	vmi := tinyVMI()
	vmi.Spec.Networks = append(vmi.Spec.Networks, virtv1.Network{Name: "sec", NetworkSource: virtv1.NetworkSource{
		Multus: &virtv1.MultusNetwork{NetworkName: "sec-net"}}})
	vmi.Spec.Domain.Devices.Interfaces = append(vmi.Spec.Domain.Devices.Interfaces, virtv1.Interface{Name: "sec",
		InterfaceBindingMethod: virtv1.InterfaceBindingMethod{Bridge: &virtv1.InterfaceBridge{}}})

	err = m.PlugInterface(ctx, vmi, "sec")
	assert.Check(t, errors.Is(err, network.ErrNoPodInterface), "plug before the pod has the interface: %v", err)
	assert.Check(t, is.Len(f.net.Active(), 1))

	podIface := network.SecondaryPodInterfaceName("sec")
	f.net.PodInterfaces = append(f.net.PodInterfaces, network.PodInterface{Name: podIface, MAC: "0a:58:c0:a8:b1:05", IPs: []string{"192.168.177.5/24"}, MTU: 1500})
	assert.NilError(t, m.PlugInterface(ctx, vmi, "sec"))
	assert.NilError(t, m.PlugInterface(ctx, vmi, "sec"), "plugging it again")
	assert.Check(t, is.Len(f.net.Active(), 2))
	assert.Check(t, is.Equal(f.net.DHCPRunning("sec"), 1))
	p := m.NetworkPlan["sec"]
	assert.Check(t, is.Equal(p.TapName, "tap"+podIface[3:]))
	nic := liveNIC(t, f, m, "ua-sec")
	assert.Assert(t, nic != nil, "no NIC ua-sec in the running domain")
	assert.Check(t, is.Equal(nic.Target.Dev, p.TapName))
	assert.Check(t, is.Equal(nic.MAC.Address, p.MAC))

	assert.NilError(t, m.UnplugInterface(ctx, "sec"))
	assert.Check(t, liveNIC(t, f, m, "ua-sec") == nil, "the NIC stayed")
	assert.Check(t, is.Len(f.net.Active(), 1))
	assert.Check(t, is.Equal(f.net.DHCPRunning("sec"), 0))
	_, planned := m.NetworkPlan["sec"]
	assert.Check(t, !planned)
	assert.NilError(t, m.UnplugInterface(ctx, "sec"), "unplugging it again")

	assert.NilError(t, m.Stop(ctx, time.Second))
	nothingLeft(t, m, f)
}

func liveNIC(t *testing.T, f fakes, m interface{ DomainName() string }, alias string) *libvirtxml.DomainInterface {
	t.Helper()
	doc, err := f.dom.XML(context.Background(), m.DomainName(), domain.XMLOptions{})
	assert.NilError(t, err)
	for i, nic := range doc.Devices.Interfaces {
		if nic.Alias != nil && nic.Alias.Name == alias {
			return &doc.Devices.Interfaces[i]
		}
	}
	return nil
}

func ports(doc *libvirtxml.Domain) int {
	n := 0
	for _, c := range doc.Devices.Controllers {
		if c.Model == "pcie-root-port" {
			n++
		}
	}
	return n
}
