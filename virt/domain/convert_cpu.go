package domain

import (
	"strconv"

	k8sv1 "k8s.io/api/core/v1"
	virtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
)

const maxVCPUs = 4096

// convertCPU writes <vcpu>, <cpu> (mode, model, topology, features) and, for
// dedicatedCpuPlacement, the <cputune> pinning.
func (c *converter) convertCPU() error {
	cpu := c.spec.CPU
	if cpu == nil {
		cpu = &virtv1.CPU{}
	}
	sockets, cores, threads := uint(cpu.Sockets), uint(cpu.Cores), uint(cpu.Threads)
	if sockets == 0 && cores == 0 && threads == 0 {
		// No topology: one socket per requested CPU, as KubeVirt does
		// (sockets perform best for guests that do not care).
		sockets = cpuFromResources(&c.spec.Resources)
	}
	sockets, cores, threads = max(sockets, 1), max(cores, 1), max(threads, 1)
	// QEMU's q35 stops at 4096 vCPUs (with x2APIC); checking each factor
	// first keeps the product from overflowing.
	maxSockets := max(uint(cpu.MaxSockets), sockets)
	if maxSockets > maxVCPUs || cores > maxVCPUs || threads > maxVCPUs || maxSockets*cores*threads > maxVCPUs {
		return convErr(ErrInvalidField, pathCPU, "more than "+strconv.Itoa(maxVCPUs)+" vCPUs")
	}
	c.vcpus = sockets * cores * threads
	c.maxVCPUs = c.vcpus
	topoSockets := sockets
	if ms := uint(cpu.MaxSockets); ms > sockets {
		// CPU hotplug: the topology covers every socket that can be
		// plugged; only the boot sockets are online.
		topoSockets = ms
		c.maxVCPUs = ms * cores * threads
	}
	c.p.vcpu = libvirtxml.DomainVCPU{Placement: "static", Value: c.maxVCPUs}
	c.dom.VCPU = &c.p.vcpu
	if c.maxVCPUs != c.vcpus {
		c.dom.VCPU.Current = c.vcpus
	}

	c.p.topology = libvirtxml.DomainCPUTopology{Sockets: int(topoSockets), Cores: int(cores), Threads: int(threads)}
	dc := &c.p.cpu
	dc.Topology = &c.p.topology
	model := cpu.Model
	if model == "" {
		model = orDefault(c.host.CPU.DefaultModel, virtv1.CPUModeHostModel)
	}
	switch model {
	case virtv1.CPUModeHostModel, virtv1.CPUModeHostPassthrough:
		dc.Mode = model
	default:
		dc.Mode = "custom"
		dc.Match = "exact"
		dc.Model = &libvirtxml.DomainCPUModel{Value: model}
	}
	if n := len(cpu.Features); n > 0 {
		dc.Features = make([]libvirtxml.DomainCPUFeature, 0, n+1)
		for i, f := range cpu.Features {
			policy := f.Policy
			switch policy {
			case "":
				policy = "require"
			case "force", "require", "optional", "disable", "forbid":
			default:
				return convErr(ErrInvalidField, indexed(pathCPU+".features", i)+".policy", "unknown policy "+strconv.Quote(policy)+" (want force, require, optional, disable or forbid)")
			}
			dc.Features = append(dc.Features, libvirtxml.DomainCPUFeature{Name: f.Name, Policy: policy})
		}
	}
	c.dom.CPU = dc

	if cpu.DedicatedCPUPlacement {
		return c.pinCPUs(cpu, cores*sockets, threads)
	}
	if cpu.IsolateEmulatorThread {
		return convErr(ErrInvalidField, pathCPU+".isolateEmulatorThread", "needs dedicatedCpuPlacement")
	}
	return nil
}

// cpuFromResources is the CPU count of the requests or limits, rounded up.
func cpuFromResources(r *virtv1.ResourceRequirements) uint {
	if q, ok := r.Limits[k8sv1.ResourceCPU]; ok && q.Value() > 0 {
		return uint(q.Value())
	}
	if q, ok := r.Requests[k8sv1.ResourceCPU]; ok && q.Value() > 0 {
		return uint(q.Value())
	}
	return 1
}

// pinCPUs pins each vCPU to one dedicated host CPU. A guest core's threads
// stay inside one host NUMA cell when they can; with NUMA passthrough they
// must. The emulator thread, when isolated, takes the next free CPU.
//
// Unlike KubeVirt, the Host facts carry no thread-sibling map, so host CPUs
// are not grouped by physical core; they are used in Host.CPU order.
func (c *converter) pinCPUs(cpu *virtv1.CPU, guestCores, threads uint) error {
	c.dedicated = true
	strict := cpu.NUMA != nil && cpu.NUMA.GuestMappingPassthrough != nil
	cells := c.hostCellsOfDedicated()
	pins := make([]int, 0, len(c.host.CPU.DedicatedCPUs))
	remaining := guestCores
	// Whole guest cores inside one cell first.
	for ci := range cells {
		for remaining > 0 && uint(len(cells[ci])) >= threads {
			pins = append(pins, cells[ci][:threads]...)
			cells[ci] = cells[ci][threads:]
			remaining--
		}
	}
	if remaining > 0 && !strict {
		// Then any free CPUs, crossing cells.
		need := threads * remaining
		for ci := range cells {
			take := min(uint(len(cells[ci])), need)
			pins = append(pins, cells[ci][:take]...)
			cells[ci] = cells[ci][take:]
			need -= take
		}
		if need == 0 {
			remaining = 0
		}
	}
	if remaining > 0 || uint(len(pins)) < c.vcpus {
		detail := "needs " + strconv.Itoa(int(c.vcpus)) + " dedicated CPUs, the host assigned " + strconv.Itoa(len(c.host.CPU.DedicatedCPUs))
		if strict {
			detail += " (NUMA passthrough keeps each guest core inside one host cell)"
		}
		return convErr(ErrMissingHostFact, pathCPU+".dedicatedCpuPlacement", detail)
	}
	tune := &libvirtxml.DomainCPUTune{VCPUPin: make([]libvirtxml.DomainCPUTuneVCPUPin, c.vcpus)}
	for i := range tune.VCPUPin {
		tune.VCPUPin[i] = libvirtxml.DomainCPUTuneVCPUPin{VCPU: uint(i), CPUSet: strconv.Itoa(pins[i])}
	}
	for ci := range cells {
		c.freeCPUs = append(c.freeCPUs, cells[ci]...)
	}
	if cpu.IsolateEmulatorThread {
		if len(c.freeCPUs) == 0 {
			return convErr(ErrMissingHostFact, pathCPU+".isolateEmulatorThread", "no dedicated CPU left for the emulator thread")
		}
		c.emulatorPin = strconv.Itoa(c.freeCPUs[0])
		c.freeCPUs = c.freeCPUs[1:]
		tune.EmulatorPin = &libvirtxml.DomainCPUTuneEmulatorPin{CPUSet: c.emulatorPin}
	}
	c.dom.CPUTune = tune
	return nil
}

// hostCellsOfDedicated groups the dedicated CPUs by host NUMA cell, in cell
// order; CPUs no cell lists form a last group.
func (c *converter) hostCellsOfDedicated() [][]int {
	ded := c.host.CPU.DedicatedCPUs
	if len(c.host.CPU.NUMACells) == 0 {
		return [][]int{append([]int(nil), ded...)}
	}
	in := make(map[int]bool, len(ded))
	for _, id := range ded {
		in[id] = true
	}
	cells := make([][]int, 0, len(c.host.CPU.NUMACells)+1)
	for _, cell := range c.host.CPU.NUMACells {
		var cpus []int
		for _, id := range cell.CPUs {
			if in[id] {
				cpus = append(cpus, id)
				delete(in, id)
			}
		}
		cells = append(cells, cpus)
	}
	var rest []int
	for _, id := range ded {
		if in[id] {
			rest = append(rest, id)
		}
	}
	if len(rest) > 0 {
		cells = append(cells, rest)
	}
	return cells
}

// hostCellOf returns the host NUMA cell of a host CPU.
func (c *converter) hostCellOf(cpu int) (int, bool) {
	for _, cell := range c.host.CPU.NUMACells {
		for _, id := range cell.CPUs {
			if id == cpu {
				return cell.ID, true
			}
		}
	}
	return 0, false
}

// convertNUMAPassthrough mirrors the host NUMA cells the vCPUs are pinned to
// as guest cells, splitting guest memory evenly in whole hugepages and
// binding each guest cell's memory to its host cell (KubeVirt's
// guestMappingPassthrough).
func (c *converter) convertNUMAPassthrough() error {
	cpu := c.spec.CPU
	if cpu == nil || cpu.NUMA == nil || cpu.NUMA.GuestMappingPassthrough == nil {
		return nil
	}
	field := pathCPU + ".numa.guestMappingPassthrough"
	if !c.dedicated {
		return convErr(ErrInvalidField, field, "needs dedicatedCpuPlacement")
	}
	if !c.hugepages {
		return convErr(ErrInvalidField, field, "needs spec.domain.memory.hugepages")
	}
	if c.dom.MaximumMemory != nil {
		return convErr(ErrInvalidField, field, "cannot be combined with spec.domain.memory.maxGuest")
	}
	if len(c.host.CPU.NUMACells) == 0 {
		// No topology reported: nothing to mirror, as in KubeVirt.
		return nil
	}
	type guestCell struct {
		host  int
		vcpus []uint
	}
	var cells []guestCell
	for _, pin := range c.dom.CPUTune.VCPUPin {
		id, _ := strconv.Atoi(pin.CPUSet)
		hc, ok := c.hostCellOf(id)
		if !ok {
			return convErr(ErrMissingHostFact, field, "host CPU "+pin.CPUSet+" is in no host NUMA cell")
		}
		j := 0
		for j < len(cells) && cells[j].host != hc {
			j++
		}
		if j == len(cells) {
			cells = append(cells, guestCell{host: hc})
		}
		cells[j].vcpus = append(cells[j].vcpus, pin.VCPU)
	}
	// Keep host cell order, so the guest layout is stable.
	ordered := make([]guestCell, 0, len(cells))
	for _, hc := range c.host.CPU.NUMACells {
		for _, gc := range cells {
			if gc.host == hc.ID {
				ordered = append(ordered, gc)
			}
		}
	}
	n := uint64(len(ordered))
	mem, page := c.memoryBytes, c.pageBytes
	if mem < n*page {
		return convErr(ErrInvalidField, field, "guest memory is smaller than one hugepage per NUMA cell")
	}
	if mem%page != 0 {
		return convErr(ErrInvalidField, field, "guest memory is not a multiple of the hugepage size")
	}
	pages := mem / page
	numa := &libvirtxml.DomainNuma{Cell: make([]libvirtxml.DomainCell, len(ordered))}
	tune := &libvirtxml.DomainNUMATune{MemNodes: make([]libvirtxml.DomainNUMATuneMemNode, len(ordered))}
	hp := make([]libvirtxml.DomainMemoryHugepage, len(ordered))
	nodeset := make([]byte, 0, 4*len(ordered))
	for i, gc := range ordered {
		cellPages := pages / n
		if uint64(i) < pages%n {
			cellPages++
		}
		cpus := make([]byte, 0, 4*len(gc.vcpus))
		for k, v := range gc.vcpus {
			if k > 0 {
				cpus = append(cpus, ',')
			}
			cpus = strconv.AppendUint(cpus, uint64(v), 10)
		}
		numa.Cell[i] = libvirtxml.DomainCell{ID: uintPtr(uint(i)), CPUs: string(cpus), Memory: uint(cellPages * page / 1024), Unit: "KiB"}
		host := strconv.Itoa(gc.host)
		tune.MemNodes[i] = libvirtxml.DomainNUMATuneMemNode{CellID: uint(i), Mode: "strict", Nodeset: host}
		hp[i] = libvirtxml.DomainMemoryHugepage{Size: uint(page / 1024), Unit: "KiB", Nodeset: strconv.Itoa(i)}
		if i > 0 {
			nodeset = append(nodeset, ',')
		}
		nodeset = append(nodeset, host...)
	}
	tune.Memory = &libvirtxml.DomainNUMATuneMemory{Mode: "strict", Nodeset: string(nodeset)}
	c.dom.CPU.Numa = numa
	c.dom.NUMATune = tune
	mb := c.dom.MemoryBacking
	mb.MemoryHugePages = &libvirtxml.DomainMemoryHugepages{Hugepages: hp}
	// All guest memory is allocated at start, so the strict binding
	// cannot fail later inside the guest.
	mb.MemoryAllocation = &libvirtxml.DomainMemoryAllocation{Mode: "immediate"}
	return nil
}
