package spec

import (
	"fmt"

	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	virtv1 "kubevirt.io/api/core/v1"
)

// maxVCPUs bounds sockets*cores*threads: QEMU's q35 machine with x2APIC
// accepts up to 1024 vCPUs; more cannot start, so it is refused up front.
const maxVCPUs = 1024

// minMemoryBytes is the smallest memory KubeVirt accepts for guest, request
// or limit (1M, decimal, as in KubeVirt).
const minMemoryBytes = 1_000_000

// cpuFeaturePolicies are libvirt's CPU feature policies.
func cpuFeaturePolicies() []string {
	return []string{"force", "require", "optional", "disable", "forbid"}
}

// validateCPU checks topology, requests/limits and placement.
func validateCPU(p *field.Path, s *virtv1.VirtualMachineInstanceSpec) field.ErrorList {
	var errs field.ErrorList
	res := s.Domain.Resources
	rp := p.Child("domain", "resources")
	req, hasReq := res.Requests[k8sv1.ResourceCPU]
	lim, hasLim := res.Limits[k8sv1.ResourceCPU]
	if hasReq && req.Sign() < 0 {
		errs = append(errs, field.Invalid(rp.Child("requests", "cpu"), req.String(), "must be greater than or equal to 0"))
	}
	if hasLim && lim.Sign() < 0 {
		errs = append(errs, field.Invalid(rp.Child("limits", "cpu"), lim.String(), "must be greater than or equal to 0"))
	}
	if hasReq && hasLim && req.Cmp(lim) > 0 {
		errs = append(errs, field.Invalid(rp.Child("requests", "cpu"), req.String(),
			fmt.Sprintf("must be less than or equal to %s %s", rp.Child("limits", "cpu"), lim.String())))
	}

	cpu := s.Domain.CPU
	if cpu == nil {
		return errs
	}
	cp := p.Child("domain", "cpu")
	if v := uint64(nz(cpu.Sockets)) * uint64(nz(cpu.Cores)) * uint64(nz(cpu.Threads)); v > maxVCPUs {
		errs = append(errs, field.Invalid(cp, v, fmt.Sprintf("sockets*cores*threads must not exceed %d vCPUs", maxVCPUs)))
	}
	if cpu.MaxSockets != 0 && cpu.Sockets > cpu.MaxSockets {
		errs = append(errs, field.Invalid(cp.Child("sockets"), cpu.Sockets,
			fmt.Sprintf("must be less than or equal to maxSockets %d", cpu.MaxSockets)))
	}
	for i, f := range cpu.Features {
		fp := cp.Child("features").Index(i)
		if f.Name == "" {
			errs = append(errs, field.Required(fp.Child("name"), "CPU feature name is required"))
		}
		if f.Policy != "" && !contains(cpuFeaturePolicies(), f.Policy) {
			errs = append(errs, field.NotSupported(fp.Child("policy"), f.Policy, cpuFeaturePolicies()))
		}
	}
	if cpu.IsolateEmulatorThread && !cpu.DedicatedCPUPlacement {
		errs = append(errs, field.Invalid(cp.Child("isolateEmulatorThread"), true,
			"requires dedicatedCpuPlacement: the emulator thread is isolated onto a dedicated CPU"))
	}
	if cpu.NUMA != nil && cpu.NUMA.GuestMappingPassthrough != nil {
		hasHuge := s.Domain.Memory != nil && s.Domain.Memory.Hugepages != nil
		if !cpu.DedicatedCPUPlacement || !hasHuge {
			errs = append(errs, field.Invalid(cp.Child("numa", "guestMappingPassthrough"), "{}",
				"requires dedicatedCpuPlacement and hugepages: guest NUMA cells mirror the pinned host cells"))
		}
	}
	if cpu.DedicatedCPUPlacement {
		errs = append(errs, validateDedicatedCPU(rp, s)...)
	}
	return errs
}

// validateDedicatedCPU is KubeVirt's validateCpuPinning: pinned vCPUs need the
// launcher pod in the Guaranteed QoS class, so whole CPUs with requests equal
// to limits, and memory requests equal to limits when limits are given.
func validateDedicatedCPU(rp *field.Path, s *virtv1.VirtualMachineInstanceSpec) field.ErrorList {
	var errs field.ErrorList
	res := s.Domain.Resources
	req, hasReq := res.Requests[k8sv1.ResourceCPU]
	lim, hasLim := res.Limits[k8sv1.ResourceCPU]
	if hasReq && req.MilliValue()%1000 != 0 {
		errs = append(errs, field.Invalid(rp.Child("requests", "cpu"), req.String(), "must be a whole number of CPUs with dedicatedCpuPlacement"))
	}
	if hasLim && lim.MilliValue()%1000 != 0 {
		errs = append(errs, field.Invalid(rp.Child("limits", "cpu"), lim.String(), "must be a whole number of CPUs with dedicatedCpuPlacement"))
	}
	if hasReq && hasLim && req.Cmp(lim) != 0 {
		errs = append(errs, field.Invalid(rp.Child("requests", "cpu"), req.String(),
			fmt.Sprintf("must equal %s %s with dedicatedCpuPlacement", rp.Child("limits", "cpu"), lim.String())))
	}
	mreq, hasMReq := res.Requests[k8sv1.ResourceMemory]
	mlim, hasMLim := res.Limits[k8sv1.ResourceMemory]
	if hasMReq && hasMLim && mreq.Cmp(mlim) != 0 {
		errs = append(errs, field.Invalid(rp.Child("requests", "memory"), mreq.String(),
			fmt.Sprintf("must equal %s %s with dedicatedCpuPlacement", rp.Child("limits", "memory"), mlim.String())))
	}
	if cpu := s.Domain.CPU; hasReq && req.MilliValue()%1000 == 0 && (cpu.Sockets != 0 || cpu.Cores != 0 || cpu.Threads != 0) {
		v := int64(nz(cpu.Sockets)) * int64(nz(cpu.Cores)) * int64(nz(cpu.Threads))
		if v != req.Value() {
			errs = append(errs, field.Invalid(rp.Child("requests", "cpu"), req.String(),
				fmt.Sprintf("must equal the %d vCPUs of the topology with dedicatedCpuPlacement", v)))
		}
	}
	return errs
}

// hugepageSizes are the page sizes each architecture's kernel offers.
func hugepageSizes(arch string) []string {
	if arch == ArchARM64 {
		return []string{"64Ki", "2Mi", "32Mi", "1Gi"}
	}
	if arch == ArchS390X {
		return []string{"1Mi"}
	}
	return []string{"2Mi", "1Gi"}
}

// validateMemory checks guest memory, requests, limits, hugepages, maxGuest.
func validateMemory(c *config, p *field.Path, s *virtv1.VirtualMachineInstanceSpec, mode specMode) field.ErrorList {
	var errs field.ErrorList
	res := s.Domain.Resources
	rp := p.Child("domain", "resources")
	mp := p.Child("domain", "memory")
	req, hasReq := res.Requests[k8sv1.ResourceMemory]
	lim, hasLim := res.Limits[k8sv1.ResourceMemory]
	var guest, maxGuest *resource.Quantity
	var huge *virtv1.Hugepages
	if m := s.Domain.Memory; m != nil {
		guest, maxGuest, huge = m.Guest, m.MaxGuest, m.Hugepages
	}

	if !hasReq && !hasLim && guest == nil && huge == nil && !mode.computeFromInstancetype {
		errs = append(errs, field.Required(mp.Child("guest"),
			"no memory requested: set spec.domain.memory.guest or spec.domain.resources.requests.memory"))
	}
	if hasReq && req.Value() < minMemoryBytes {
		errs = append(errs, field.Invalid(rp.Child("requests", "memory"), req.String(), "must be greater than or equal to 1M"))
	}
	if hasLim && lim.Value() < minMemoryBytes {
		errs = append(errs, field.Invalid(rp.Child("limits", "memory"), lim.String(), "must be greater than or equal to 1M"))
	}
	if guest != nil && guest.Value() < minMemoryBytes {
		errs = append(errs, field.Invalid(mp.Child("guest"), guest.String(), "must be greater than or equal to 1M"))
	}
	if hasReq && hasLim && req.Cmp(lim) > 0 {
		errs = append(errs, field.Invalid(rp.Child("requests", "memory"), req.String(),
			fmt.Sprintf("must be less than or equal to %s %s", rp.Child("limits", "memory"), lim.String())))
	}
	if guest != nil && hasLim && guest.Cmp(lim) > 0 {
		errs = append(errs, field.Invalid(mp.Child("guest"), guest.String(),
			fmt.Sprintf("must be less than or equal to the memory limit %s %s", rp.Child("limits", "memory"), lim.String())))
	}
	if maxGuest != nil {
		switch {
		case guest == nil:
			errs = append(errs, field.Required(mp.Child("guest"), "required when maxGuest is set"))
		case maxGuest.Cmp(*guest) < 0:
			errs = append(errs, field.Invalid(mp.Child("maxGuest"), maxGuest.String(),
				fmt.Sprintf("must be greater than or equal to %s %s", mp.Child("guest"), guest.String())))
		default:
			errs = append(errs, validateMemoryHotplug(mp, s, *guest, *maxGuest)...)
		}
	}
	if huge != nil {
		errs = append(errs, validateHugepages(c, mp.Child("hugepages", "pageSize"), s, huge, guest, req, hasReq)...)
	}
	return errs
}

// Memory hotplug (maxGuest) as KubeVirt allows it: a guest of at least
// 1 GiB (below that its kernel cannot hold the structures and the 64 MiB
// swiotlb a hotpluggable layout needs: a smaller one fails to boot), whole
// hotplug blocks (2 MiB, 1 GiB with 1 GiB hugepages).
const (
	minHotplugGuest     = 1 << 30
	hotplugBlock        = 2 << 20
	hotplugBlockHuge1Gi = 1 << 30
)

// validateMemoryHotplug checks a spec with maxGuest with KubeVirt's rules
// and words, naming spec.domain.memory.guest as KubeVirt does.
func validateMemoryHotplug(mp *field.Path, s *virtv1.VirtualMachineInstanceSpec, guest, maxGuest resource.Quantity) field.ErrorList {
	gp := mp.Child("guest")
	d := s.Domain
	block := int64(hotplugBlock)
	if h := d.Memory.Hugepages; h != nil && h.PageSize == "1Gi" {
		block = hotplugBlockHuge1Gi
	}
	alignment := resource.NewQuantity(block, resource.BinarySI).String()
	switch {
	case d.CPU != nil && d.CPU.Realtime != nil:
		return field.ErrorList{field.Invalid(gp, guest.String(), "Memory hotplug is not compatible with realtime VMs")}
	case d.CPU != nil && d.CPU.NUMA != nil && d.CPU.NUMA.GuestMappingPassthrough != nil:
		return field.ErrorList{field.Invalid(gp, guest.String(), "Memory hotplug is not compatible with guest mapping passthrough")}
	case d.LaunchSecurity != nil:
		return field.ErrorList{field.Invalid(gp, guest.String(), "Memory hotplug is not compatible with encrypted VMs")}
	case guest.Value()%block != 0:
		return field.ErrorList{field.Invalid(gp, guest.String(), "Guest memory must be "+alignment+" aligned")}
	case maxGuest.Value()%block != 0:
		return field.ErrorList{field.Invalid(gp, guest.String(), "MaxGuest must be "+alignment+" aligned")}
	case guest.Value() < minHotplugGuest:
		return field.ErrorList{field.Invalid(gp, guest.String(), "Memory hotplug is only available for VMs with at least 1Gi of guest memory")}
	}
	return nil
}

// validateHugepages checks the page size exists on the architecture and that
// the memory backed by it is a whole number of pages (the guest's RAM is
// carved out of those pages).
func validateHugepages(c *config, pp *field.Path, s *virtv1.VirtualMachineInstanceSpec, h *virtv1.Hugepages,
	guest *resource.Quantity, req resource.Quantity, hasReq bool) field.ErrorList {
	sizes := hugepageSizes(c.effectiveArch(s))
	page, err := resource.ParseQuantity(h.PageSize)
	if err != nil || !contains(sizes, h.PageSize) {
		return field.ErrorList{field.NotSupported(pp, h.PageSize, sizes)}
	}
	mem, from := guest, "spec.domain.memory.guest"
	if mem == nil && hasReq {
		mem, from = &req, "spec.domain.resources.requests.memory"
	}
	if mem == nil {
		return nil
	}
	if mem.Cmp(page) < 0 {
		return field.ErrorList{field.Invalid(pp, h.PageSize, fmt.Sprintf("must not be larger than %s %s", from, mem.String()))}
	}
	if mem.Value()%page.Value() != 0 {
		return field.ErrorList{field.Invalid(pp, h.PageSize, fmt.Sprintf("%s %s is not a multiple of the page size", from, mem.String()))}
	}
	return nil
}

func nz(v uint32) uint32 {
	if v == 0 {
		return 1
	}
	return v
}

func contains[T comparable](list []T, v T) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}
