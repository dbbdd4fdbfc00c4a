package libvirt

import (
	"context"
	"fmt"

	"libvirt.org/go/libvirt"
	"libvirt.org/go/libvirtxml"
)

// HostCPU returns what libvirt says about the CPUs a domain of virtType
// ("kvm", or "qemu" for software emulation) and machine type can have on
// arch ("x86_64") here: the domain capabilities (the named CPU models,
// usable or not, and the host-model CPU), and the host-model CPU with
// every feature listed, as `virsh hypervisor-cpu-baseline --features`
// prints it. baseline is nil when the host-model mode is not supported.
// KubeVirt's node labeller builds its labels from the same two documents.
func (m *Manager) HostCPU(ctx context.Context, arch, machine, virtType string) (caps *libvirtxml.DomainCaps, baseline *libvirtxml.DomainCPU, err error) {
	err = m.call(ctx, "host-cpu", "", func(c *libvirt.Connect) error {
		doc, err := c.GetDomainCapabilities("", arch, machine, virtType, 0)
		if err != nil {
			return err
		}
		caps = &libvirtxml.DomainCaps{}
		if err := caps.Unmarshal(doc); err != nil {
			return fmt.Errorf("domain capabilities: %w", err)
		}
		host := hostModel(caps)
		if host == nil {
			return nil
		}
		cpu, err := host.Marshal()
		if err != nil {
			return err
		}
		doc, err = c.BaselineHypervisorCPU("", arch, machine, virtType, []string{cpu}, libvirt.CONNECT_BASELINE_CPU_EXPAND_FEATURES)
		if err != nil {
			return err
		}
		baseline = &libvirtxml.DomainCPU{}
		if err := baseline.Unmarshal(doc); err != nil {
			return fmt.Errorf("baseline CPU: %w", err)
		}
		return nil
	})
	return caps, baseline, err
}

// hostModel is the host-model mode of caps as a CPU definition (its model,
// vendor and features), or nil when that mode is not supported.
func hostModel(caps *libvirtxml.DomainCaps) *libvirtxml.DomainCPU {
	if caps.CPU == nil {
		return nil
	}
	for _, mode := range caps.CPU.Modes {
		if mode.Name != "host-model" || mode.Supported != "yes" || len(mode.Models) == 0 {
			continue
		}
		cpu := &libvirtxml.DomainCPU{Mode: "custom", Match: "exact", Vendor: mode.Vendor,
			Model: &libvirtxml.DomainCPUModel{Value: mode.Models[0].Name, Fallback: "forbid"}}
		for _, f := range mode.Features {
			cpu.Features = append(cpu.Features, libvirtxml.DomainCPUFeature(f))
		}
		return cpu
	}
	return nil
}
