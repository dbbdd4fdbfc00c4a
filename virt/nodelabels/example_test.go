package nodelabels_test

import (
	"fmt"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/virt/nodelabels"
)

// The labels of a node whose libvirt offers Penryn and whose host-model
// CPU is an Intel Skylake.
func ExampleLabels() {
	caps := &libvirtxml.DomainCaps{CPU: &libvirtxml.DomainCapsCPU{Modes: []libvirtxml.DomainCapsCPUMode{
		{Name: "host-model", Supported: "yes", Vendor: "Intel", Models: []libvirtxml.DomainCapsCPUModel{{Name: "Skylake-Client"}}},
		{Name: "custom", Supported: "yes", Models: []libvirtxml.DomainCapsCPUModel{{Name: "Penryn", Usable: "yes"}}},
	}}}
	labels := nodelabels.Labels(caps, nil, nil)
	fmt.Println(labels["cpu-model.node.kubevirt.io/Penryn"], labels["host-model-cpu.node.kubevirt.io/Skylake-Client"],
		labels["cpu-vendor.node.kubevirt.io/Intel"])
	// Output: true true true
}
