package domain

import (
	"strings"

	"libvirt.org/go/libvirtxml"
)

// The hotplug capacity of a q35 guest, as KubeVirt sizes it: PCIe devices
// are hotplugged into empty pcie-root-ports, one device each, and libvirt
// adds only the ports the defined devices need.
const (
	hotplugTotalPorts        = 8
	hotplugMinFreePorts      = 3
	hotplugLargeMemory       = 2 << 30
	hotplugLargeTotalPorts   = 16
	hotplugLargeMinFreePorts = 6
	// maxPCIIndex is the highest PCI controller index: each root port
	// takes a slot of bus 0, which has 32.
	maxPCIIndex = 31
	// firstRootPortNr is the port number libvirt gives the first root port
	// (slot 2, function 0: slot << 3 | function).
	firstRootPortNr = 0x10
)

// HotplugPorts are the empty pcie-root-port controllers to add to doc, a
// defined domain whose devices libvirt has given their PCI addresses (its
// inactive XML), so that NICs can be hotplugged later: ports for 8 devices
// in all and at least 3 free (16 and 6 with more than 2 GiB of memory), as
// KubeVirt leaves them, numbered after doc's highest PCI controller. A
// machine without PCIe root ports (not q35) gets none. It counts every
// root port as taken: ask once, right after the define.
func HotplugPorts(doc *libvirtxml.Domain) []libvirtxml.DomainController {
	if doc == nil || doc.OS == nil || doc.OS.Type == nil || !strings.Contains(doc.OS.Type.Machine, "q35") || doc.Devices == nil {
		return nil
	}
	used, highest, port := 0, 0, firstRootPortNr-1
	for _, c := range doc.Devices.Controllers {
		if c.Type != "pci" || c.Index == nil {
			continue
		}
		highest = max(highest, int(*c.Index))
		if c.Model == "pcie-root-port" {
			used++
			if c.PCI != nil && c.PCI.Target != nil && c.PCI.Target.Port != nil {
				port = max(port, int(*c.PCI.Target.Port))
			}
		}
	}
	total, minFree := hotplugTotalPorts, hotplugMinFreePorts
	if doc.Memory != nil && MemoryBytes(doc.Memory.Value, doc.Memory.Unit) > hotplugLargeMemory {
		total, minFree = hotplugLargeTotalPorts, hotplugLargeMinFreePorts
	}
	var out []libvirtxml.DomainController
	for i := range max(total-used, minFree) {
		index, nr := uint(highest+1+i), uint(port+1+i)
		if index > maxPCIIndex {
			break
		}
		// What libvirt fills in for the ports of a define, it needs
		// given for one attached to a definition: the model's name, the
		// chassis (the index, as libvirt numbers them) and a port number
		// no other port has.
		out = append(out, libvirtxml.DomainController{Type: "pci", Index: &index, Model: "pcie-root-port",
			PCI: &libvirtxml.DomainControllerPCI{Model: &libvirtxml.DomainControllerPCIModel{Name: "pcie-root-port"},
				Target: &libvirtxml.DomainControllerPCITarget{Chassis: &index, Port: &nr}}})
	}
	return out
}
