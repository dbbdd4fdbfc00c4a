package domain

import (
	"slices"
	"strconv"

	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"libvirt.org/go/libvirtxml"
)

const (
	// virtio-mem plugs memory in blocks; KubeVirt uses 2 MiB, or 1 GiB
	// when the guest is backed by 1 GiB hugepages.
	hotplugBlock       = 2 << 20
	hotplugBlockHuge1G = 1 << 30
)

// convertMemory writes <memory>, <memoryBacking> and, for memory hotplug,
// <maxMemory> with a virtio-mem device.
//
// The guest size is spec.domain.memory.guest, else the memory limit, else
// the memory request, as in KubeVirt. A guest larger than the request is
// overcommit: the pod is sized by the request, the domain by the guest size,
// so the domain needs nothing special for it.
func (c *converter) convertMemory() error {
	guest, field := c.guestMemory()
	if guest <= 0 {
		return convErr(ErrInvalidField, pathMemory+".guest", "guest memory is not set (memory.guest, resources.limits.memory or resources.requests.memory)")
	}
	c.memoryBytes = uint64(guest)
	c.p.memory = libvirtxml.DomainMemory{Value: uint(guest), Unit: "b"}
	c.dom.Memory = &c.p.memory
	mem := c.spec.Memory

	var backing libvirtxml.DomainMemoryBacking
	useBacking := false
	if mem != nil && mem.Hugepages != nil {
		q, err := resource.ParseQuantity(mem.Hugepages.PageSize)
		if err != nil || q.Value() < 4096 || q.Value()%4096 != 0 {
			return convErr(ErrInvalidField, pathMemory+".hugepages.pageSize", "want a hugepage size such as 2Mi or 1Gi, got "+strconv.Quote(mem.Hugepages.PageSize))
		}
		if sizes := c.host.HugepageSizes; len(sizes) > 0 && !hugepageAvailable(sizes, q.Value()) {
			return convErr(ErrMissingHostFact, pathMemory+".hugepages.pageSize", "hugepages of "+mem.Hugepages.PageSize+" are not available on the host")
		}
		if c.memoryBytes%uint64(q.Value()) != 0 {
			return convErr(ErrInvalidField, field, "guest memory is not a multiple of the hugepage size "+mem.Hugepages.PageSize)
		}
		c.hugepages, c.pageBytes = true, uint64(q.Value())
		backing.MemoryHugePages = &libvirtxml.DomainMemoryHugepages{Hugepages: []libvirtxml.DomainMemoryHugepage{{Size: uint(q.Value() / 1024), Unit: "KiB"}}}
		useBacking = true
	}
	if len(c.spec.Devices.Filesystems) > 0 {
		// virtiofsd maps guest memory, so it must be shared memory: memfd
		// unless hugepages (themselves shareable) back it.
		c.sharedMem = true
		if !c.hugepages {
			backing.MemorySource = &libvirtxml.DomainMemorySource{Type: "memfd"}
		}
		backing.MemoryAccess = &libvirtxml.DomainMemoryAccess{Mode: "shared"}
		useBacking = true
	}
	if useBacking {
		c.dom.MemoryBacking = &backing
	}
	if mem != nil && mem.MaxGuest != nil {
		return c.convertMemoryHotplug()
	}
	return nil
}

func (c *converter) guestMemory() (int64, string) {
	if m := c.spec.Memory; m != nil && m.Guest != nil {
		return m.Guest.Value(), pathMemory + ".guest"
	}
	if q, ok := c.spec.Resources.Limits[k8sv1.ResourceMemory]; ok {
		return q.Value(), pathDomain + ".resources.limits.memory"
	}
	if q, ok := c.spec.Resources.Requests[k8sv1.ResourceMemory]; ok {
		return q.Value(), pathDomain + ".resources.requests.memory"
	}
	return 0, pathMemory + ".guest"
}

func hugepageAvailable(sizes []string, bytes int64) bool {
	return slices.ContainsFunc(sizes, func(s string) bool {
		q, err := resource.ParseQuantity(s)
		return err == nil && q.Value() == bytes
	})
}

// convertMemoryHotplug prepares memory hotplug as KubeVirt does: the domain
// may grow to maxGuest through a virtio-mem device that starts empty
// (requested 0) on guest NUMA node 0, which holds every vCPU and the boot
// memory.
func (c *converter) convertMemoryHotplug() error {
	max := c.spec.Memory.MaxGuest.Value()
	field := pathMemory + ".maxGuest"
	guest := int64(c.memoryBytes)
	if max == guest {
		return nil
	}
	if max < guest {
		return convErr(ErrInvalidField, field, "is smaller than the guest memory")
	}
	block := int64(hotplugBlock)
	if c.pageBytes == hotplugBlockHuge1G {
		block = hotplugBlockHuge1G
	}
	plug := max - guest
	if plug%block != 0 || guest%block != 0 {
		return convErr(ErrInvalidField, field, "guest memory and maxGuest must be multiples of the hotplug block of "+strconv.FormatInt(block>>20, 10)+"Mi")
	}
	// libvirt's <memory> is the total including memory devices.
	c.dom.Memory.Value = uint(max)
	c.dom.MaximumMemory = &libvirtxml.DomainMaxMemory{Value: uint(max), Unit: "b", Slots: c.opts.memorySlots}
	cpus := "0"
	if c.maxVCPUs > 1 {
		cpus = "0-" + strconv.Itoa(int(c.maxVCPUs)-1)
	}
	c.dom.CPU.Numa = &libvirtxml.DomainNuma{Cell: []libvirtxml.DomainCell{{ID: uintPtr(0), CPUs: cpus, Memory: uint(guest), Unit: "b"}}}
	c.dev.Memorydevs = []libvirtxml.DomainMemorydev{{
		Model: "virtio-mem",
		Target: &libvirtxml.DomainMemorydevTarget{
			Size:      &libvirtxml.DomainMemorydevTargetSize{Value: uint(plug), Unit: "b"},
			Node:      &libvirtxml.DomainMemorydevTargetNode{Value: 0},
			Block:     &libvirtxml.DomainMemorydevTargetBlock{Value: uint(block), Unit: "b"},
			Requested: &libvirtxml.DomainMemorydevTargetRequested{Value: 0, Unit: "b"},
		},
		Alias: alias("virtio-mem"),
	}}
	return nil
}
