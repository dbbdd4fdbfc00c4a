package virt

import (
	"context"
	"errors"
	"fmt"
	"strings"

	virtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/virt/domain"
	"github.com/virtkit/virtkit/virt/network"
)

// ErrUnplugPending: the guest has not released a NIC UnplugInterface asked
// it to release yet; call again later.
var ErrUnplugPending = errors.New("the guest has not released the NIC yet")

// PlugInterface hotplugs the interface name of vmi, the running VMI's
// spec that gained it (defaulted, as for New), into the guest: it plans
// the interface on the pod's interfaces (its pod interface must be there
// by now: an error wrapping network.ErrNoPodInterface says it is not yet),
// sets up its tap and bridge in the pod, serves DHCP for it when its
// network has an IPv4 address, and attaches the NIC to the running domain
// (not to its definition: a restart starts from the spec). The plan joins
// NetworkPlan; keep it as after Start. An interface already planned is
// left as it is. When a step fails, what the call set up is undone.
func (m *Machine) PlugInterface(ctx context.Context, vmi *virtv1.VirtualMachineInstance, name string) error {
	if _, ok := m.NetworkPlan[name]; ok {
		return nil
	}
	fail := func(err error) error {
		return fmt.Errorf("virt: VMI %s/%s: plug interface %s: %w", m.vmi.Namespace, m.vmi.Name, name, err)
	}
	if m.network == nil {
		return fail(errors.New("no pod network namespace was given (virt.WithNetwork)"))
	}
	one, err := oneInterface(vmi, name)
	if err != nil {
		return fail(err)
	}
	pod, err := m.network.Discover(ctx)
	if err != nil {
		return fail(err)
	}
	plan, err := network.MakePlan(one, pod, m.planOpts...)
	if err != nil {
		return fail(err)
	}
	ip := plan[name]
	host := m.host
	host.Network = plan
	nic, err := domain.InterfaceDevice(one, name, host, m.convertOpts...)
	if err != nil {
		return fail(err)
	}
	if err := m.network.Setup(ctx, plan); err != nil {
		return fail(err)
	}
	undo := func(err error) error {
		return fail(errors.Join(err, m.network.Teardown(context.WithoutCancel(ctx), plan)))
	}
	var srv network.DHCPServer
	if servesDHCP(ip) {
		if srv, err = m.network.StartDHCP(ctx, ip); err != nil {
			return undo(err)
		}
	}
	if err := m.dom.AttachDevice(ctx, m.name, nic, domain.DeviceLive); err != nil {
		if srv != nil {
			err = errors.Join(err, srv.Stop())
		}
		return undo(err)
	}
	if m.NetworkPlan == nil {
		m.NetworkPlan = network.Plan{}
	}
	m.NetworkPlan[name] = ip
	if srv != nil {
		if m.dhcp == nil {
			m.dhcp = map[string]network.DHCPServer{}
		}
		m.dhcp[name] = srv
	}
	m.log.Info("interface plugged", "vmi", m.vmi.Name, "interface", name, "tap", ip.TapName, "pod", ip.Pod.Name)
	return nil
}

// UnplugInterface takes the NIC of the planned interface name out of the
// running guest: the first call asks the guest to release it (PCI unplug)
// and, while it has not, returns an error wrapping ErrUnplugPending; once
// the domain no longer has it, its DHCP server stops, its tap and bridge
// go, and it leaves NetworkPlan. An interface not planned is done.
func (m *Machine) UnplugInterface(ctx context.Context, name string) error {
	ip, ok := m.NetworkPlan[name]
	if !ok {
		return nil
	}
	fail := func(err error) error {
		return fmt.Errorf("virt: VMI %s/%s: unplug interface %s: %w", m.vmi.Namespace, m.vmi.Name, name, err)
	}
	live, err := m.dom.XML(ctx, m.name, domain.XMLOptions{})
	if err != nil {
		return fail(err)
	}
	if nic := findNIC(live, name, ip.MAC); nic != nil {
		if !m.unplugging[name] {
			if err := m.dom.DetachDevice(ctx, m.name, nic, domain.DeviceLive); err != nil {
				return fail(err)
			}
			if m.unplugging == nil {
				m.unplugging = map[string]bool{}
			}
			m.unplugging[name] = true
		}
		if live, err = m.dom.XML(ctx, m.name, domain.XMLOptions{}); err != nil {
			return fail(err)
		}
		if findNIC(live, name, ip.MAC) != nil {
			return fail(ErrUnplugPending)
		}
	}
	var errs []error
	if srv, ok := m.dhcp[name]; ok {
		errs = append(errs, srv.Stop())
		delete(m.dhcp, name)
	}
	if m.network != nil {
		errs = append(errs, m.network.Teardown(ctx, network.Plan{name: ip}))
	}
	if err := errors.Join(errs...); err != nil {
		return fail(err)
	}
	delete(m.unplugging, name)
	delete(m.NetworkPlan, name)
	m.log.Info("interface unplugged", "vmi", m.vmi.Name, "interface", name)
	return nil
}

// oneInterface is vmi cut down to its interface name and that interface's
// network: what the planner and the converter see of a hotplugged NIC.
func oneInterface(vmi *virtv1.VirtualMachineInstance, name string) (*virtv1.VirtualMachineInstance, error) {
	one := vmi.DeepCopy()
	one.Spec.Domain.Devices.Interfaces, one.Spec.Networks = nil, nil
	for _, iface := range vmi.Spec.Domain.Devices.Interfaces {
		if iface.Name == name {
			one.Spec.Domain.Devices.Interfaces = append(one.Spec.Domain.Devices.Interfaces, iface)
		}
	}
	for _, n := range vmi.Spec.Networks {
		if n.Name == name {
			one.Spec.Networks = append(one.Spec.Networks, n)
		}
	}
	if len(one.Spec.Domain.Devices.Interfaces) != 1 || len(one.Spec.Networks) != 1 {
		return nil, fmt.Errorf("spec.domain.devices.interfaces: want one interface and one network named %q", name)
	}
	return one, nil
}

// findNIC is the domain's NIC of the interface name: the one with its user
// alias (ua-NAME), else the one with mac.
func findNIC(doc *libvirtxml.Domain, name, mac string) *libvirtxml.DomainInterface {
	if doc == nil || doc.Devices == nil {
		return nil
	}
	for i, nic := range doc.Devices.Interfaces {
		if nic.Alias != nil && nic.Alias.Name == "ua-"+name {
			return &doc.Devices.Interfaces[i]
		}
	}
	for i, nic := range doc.Devices.Interfaces {
		if nic.MAC != nil && mac != "" && strings.EqualFold(nic.MAC.Address, mac) {
			return &doc.Devices.Interfaces[i]
		}
	}
	return nil
}
