package domain

import (
	"strconv"

	virtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/virt/network"
)

// nicModels are the guest NIC models KubeVirt accepts.
var nicModels = [...]string{"virtio", "e1000", "e1000e", "igb", "ne2k_pci", "pcnet", "rtl8139"}

// convertInterfaces writes one <interface> per spec.domain.devices.interfaces
// entry. The host side comes from the network plan: virt/network has already
// created a tap device in the pod, so the domain only opens it
// (<interface type='ethernet'> with <target managed='no'>), as KubeVirt does
// for its bridge and masquerade bindings.
func (c *converter) convertInterfaces() error {
	ifaces := c.spec.Devices.Interfaces
	if len(ifaces) == 0 {
		return nil
	}
	c.dev.Interfaces = make([]libvirtxml.DomainInterface, 0, len(ifaces))
	parts := make([]nicParts, len(ifaces))
	for i := range ifaces {
		if ifaces[i].State == virtv1.InterfaceStateAbsent {
			// Being unplugged: the guest must not see it.
			continue
		}
		c.dev.Interfaces = c.dev.Interfaces[:len(c.dev.Interfaces)+1]
		if err := c.planInterface(i, &parts[i], &c.dev.Interfaces[len(c.dev.Interfaces)-1]); err != nil {
			return err
		}
	}
	return nil
}

// planInterface writes spec.domain.devices.interfaces[i] on its network plan.
func (c *converter) planInterface(i int, p *nicParts, nic *libvirtxml.DomainInterface) error {
	iface := &c.spec.Devices.Interfaces[i]
	field := fieldPath{pathInterfaces, i}
	if err := checkBinding(field, iface); err != nil {
		return err
	}
	plan, ok := c.host.Network[iface.Name]
	if !ok {
		return convErr(ErrMissingPlan, field.at(""), "no network plan for interface "+strconv.Quote(iface.Name))
	}
	if plan.TapName == "" {
		return convErr(ErrMissingPlan, field.at(""), "the network plan for "+strconv.Quote(iface.Name)+" names no tap device")
	}
	return c.convertInterface(field, iface, &plan, p, nic)
}

// InterfaceDevice is the <interface> Convert writes for vmi's interface
// name on its plan in host.Network: what a running domain is given when
// the interface is hotplugged (Manager.AttachDevice), and the device to
// name when it is unplugged. An interface being unplugged (state absent)
// has none.
func InterfaceDevice(vmi *virtv1.VirtualMachineInstance, name string, host Host, opts ...Option) (*libvirtxml.DomainInterface, error) {
	if vmi == nil {
		return nil, convErr(ErrInvalidField, "vmi", "is nil")
	}
	c := newConverter(vmi, host, opts)
	if err := c.convertArch(); err != nil {
		return nil, err
	}
	for i, iface := range c.spec.Devices.Interfaces {
		if iface.Name != name {
			continue
		}
		if iface.State == virtv1.InterfaceStateAbsent {
			return nil, convErr(ErrInvalidField, fieldPath{pathInterfaces, i}.at(".state"), "is absent: the interface is being unplugged")
		}
		var parts nicParts
		nic := &libvirtxml.DomainInterface{}
		if err := c.planInterface(i, &parts, nic); err != nil {
			return nil, err
		}
		return nic, nil
	}
	return nil, convErr(ErrInvalidField, pathInterfaces, "no interface named "+strconv.Quote(name))
}

func checkBinding(field fieldPath, iface *virtv1.Interface) error {
	b := &iface.InterfaceBindingMethod
	switch {
	case b.Bridge != nil, b.Masquerade != nil:
		return nil
	case iface.Binding != nil:
		return convErr(ErrNotImplemented, field.at(".binding"), "network binding plugins are not implemented")
	case b.SRIOV != nil:
		return convErr(ErrNotImplemented, field.at(".sriov"), "the SR-IOV binding is not implemented")
	case b.PasstBinding != nil, b.DeprecatedPasst != nil:
		return convErr(ErrNotImplemented, field.at(".passtBinding"), "the passt binding is not implemented")
	case b.DeprecatedSlirp != nil, b.DeprecatedMacvtap != nil:
		return convErr(ErrNotImplemented, field.at(""), "the slirp and macvtap bindings were removed from KubeVirt")
	}
	return convErr(ErrInvalidField, field.at(""), "names no binding (bridge or masquerade)")
}

func (c *converter) convertInterface(field fieldPath, iface *virtv1.Interface, plan *network.InterfacePlan, p *nicParts, nic *libvirtxml.DomainInterface) error {
	p.source.Ethernet = &p.ethernet
	p.target = libvirtxml.DomainInterfaceTarget{Dev: plan.TapName, Managed: "no"}
	p.alias.Name = "ua-" + iface.Name
	*nic = libvirtxml.DomainInterface{Source: &p.source, Target: &p.target, Alias: &p.alias}
	model := iface.Model
	if model == "" {
		model = "virtio"
	}
	known := false
	for _, m := range nicModels {
		known = known || m == model
	}
	if !known {
		return convErr(ErrInvalidField, field.at(".model"), "unknown model "+strconv.Quote(model))
	}
	if model == "virtio" {
		model = c.virtioModel
	}
	p.model.Type = model
	nic.Model = &p.model

	// The spec's MAC wins; the plan's is the one virt/network generated (and
	// hands out by DHCP) when the spec has none.
	mac := iface.MacAddress
	if mac == "" {
		mac = plan.MAC
	}
	if mac != "" {
		p.mac.Address = mac
		nic.MAC = &p.mac
	}
	if plan.MTU > 0 {
		p.mtu.Size = uint(plan.MTU)
		nic.MTU = &p.mtu
	}
	if plan.Queues > 1 {
		if iface.Model != "" && iface.Model != "virtio" {
			return convErr(ErrInvalidField, field.at(".model"), "multiqueue needs a virtio NIC")
		}
		// vhost-net moves the data path into the kernel; it needs KVM's
		// eventfds, so emulated guests keep QEMU's userspace path.
		name := "vhost"
		if c.host.Emulation {
			name = "qemu"
		}
		nic.Driver = &libvirtxml.DomainInterfaceDriver{Name: name, Queues: uint(plan.Queues)}
	}
	if iface.BootOrder != nil {
		if *iface.BootOrder == 0 {
			return convErr(ErrInvalidField, field.at(".bootOrder"), "boot order starts at 1")
		}
		p.boot.Order = *iface.BootOrder
		nic.Boot = &p.boot
	} else {
		// No PXE from a NIC that is not meant to boot: skipping its option
		// ROM saves guest memory and boot time, as in KubeVirt.
		p.rom.Enabled = "no"
		nic.ROM = &p.rom
	}
	if iface.State == virtv1.InterfaceStateLinkDown {
		nic.Link = &libvirtxml.DomainInterfaceLink{State: "down"}
	}
	if iface.ACPIIndex > 0 {
		nic.ACPI = &libvirtxml.DomainDeviceACPI{Index: uint(iface.ACPIIndex)}
	}
	addr, err := c.pciAddress(field.at(".pciAddress"), iface.PciAddress, nic.Alias.Name)
	if err != nil {
		return err
	}
	nic.Address = addr
	return nil
}
