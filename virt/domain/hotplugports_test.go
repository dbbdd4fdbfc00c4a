package domain_test

import (
	"testing"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/virt/domain"
)

// A q35 guest gets root ports for 8 devices in all and at least 3 free (16
// and 6 above 2 GiB), numbered after its highest PCI controller; other
// machines get none.
func TestHotplugPorts(t *testing.T) {
	defined := func(machine string, memMiB uint, ports int) *libvirtxml.Domain {
		d := &libvirtxml.Domain{OS: &libvirtxml.DomainOS{Type: &libvirtxml.DomainOSType{Machine: machine}},
			Memory: &libvirtxml.DomainMemory{Value: memMiB, Unit: "MiB"}, Devices: &libvirtxml.DomainDeviceList{}}
		zero := uint(0)
		d.Devices.Controllers = append(d.Devices.Controllers, libvirtxml.DomainController{Type: "pci", Index: &zero, Model: "pcie-root"})
		for i := 1; i <= ports; i++ {
			index := uint(i)
			d.Devices.Controllers = append(d.Devices.Controllers, libvirtxml.DomainController{Type: "pci", Index: &index, Model: "pcie-root-port"})
		}
		return d
	}
	for _, c := range []struct {
		name     string
		doc      *libvirtxml.Domain
		n, first int
	}{
		{"a small q35 guest with 3 devices", defined("pc-q35-7.2", 128, 3), 5, 4},
		{"one with 6 devices keeps 3 free", defined("q35", 128, 6), 3, 7},
		{"a guest above 2 GiB", defined("q35", 4096, 3), 13, 4},
		{"capped at index 31", defined("q35", 4096, 28), 3, 29},
		{"not q35", defined("pc-i440fx-7.2", 128, 0), 0, 0},
	} {
		got := domain.HotplugPorts(c.doc)
		if len(got) != c.n {
			t.Errorf("%s: %d ports, want %d", c.name, len(got), c.n)
			continue
		}
		for i, p := range got {
			if p.Type != "pci" || p.Model != "pcie-root-port" || p.Index == nil || int(*p.Index) != c.first+i {
				t.Errorf("%s: port %d is %+v, want pcie-root-port index %d", c.name, i, p, c.first+i)
				continue
			}
			// What libvirt needs given for a port attached to a definition.
			if p.PCI == nil || p.PCI.Model == nil || p.PCI.Model.Name != "pcie-root-port" || p.PCI.Target == nil ||
				p.PCI.Target.Chassis == nil || *p.PCI.Target.Chassis != *p.Index || p.PCI.Target.Port == nil || *p.PCI.Target.Port != uint(0x10+i) {
				t.Errorf("%s: port %d has model, chassis or port number %+v", c.name, i, p.PCI)
			}
		}
	}
}
