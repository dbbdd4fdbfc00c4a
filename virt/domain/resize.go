package domain

import (
	"context"
	"fmt"

	"libvirt.org/go/libvirtxml"
)

// Resizer changes the vCPUs and the memory of a running domain (CPU and
// memory hotplug, KubeVirt's LiveUpdate). Both change the running domain
// only: the next start boots from the definition, as a restarted VM boots
// from its spec. A Manager that can resize implements it; callers
// type-assert.
type Resizer interface {
	// SetVCPUs sets how many of the domain's vCPUs are online. A domain
	// can grow up to the maximum its <vcpu> element names (the spec's
	// maxSockets x cores x threads); asking for more, or for none, fails
	// with ErrInvalidSpec, and a domain that is not running fails with
	// ErrInvalidState. The guest sees a hot-plugged vCPU arrive and brings
	// it online itself (Linux: /sys/devices/system/cpu/cpuN/online).
	SetVCPUs(ctx context.Context, name string, n uint) error
	// SetPluggedMemory sets how much memory the domain's virtio-mem device
	// asks the guest to take (its requested size), in bytes: a multiple of
	// the device's block size, at most its size (the spec's maxGuest less
	// the boot memory). A domain without a virtio-mem device, or a size it
	// cannot take, fails with ErrInvalidSpec. The guest plugs the memory
	// at its pace; the device's current size says how much it has.
	SetPluggedMemory(ctx context.Context, name string, bytes uint64) error
}

// Operations of a Resizer, as Error.Op names them.
const (
	OpSetVCPUs         = "set-vcpus"
	OpSetPluggedMemory = "set-plugged-memory"
)

// ResizedVCPUs checks that doc, a running domain's document, can have n
// vCPUs online, for SetVCPUs implementations.
func ResizedVCPUs(doc *libvirtxml.Domain, name string, n uint) error {
	max := uint(0)
	if doc.VCPU != nil {
		max = doc.VCPU.Value
	}
	switch {
	case n == 0:
		return &Error{Op: OpSetVCPUs, Domain: name, Kind: ErrInvalidSpec, Message: "a domain needs at least one vCPU"}
	case n > max:
		return &Error{Op: OpSetVCPUs, Domain: name, Kind: ErrInvalidSpec,
			Message: fmt.Sprintf("%d vCPUs asked for, the domain has room for %d (spec.domain.cpu.maxSockets)", n, max)}
	}
	return nil
}

// ResizedMemoryDevice returns the virtio-mem device of doc, a running
// domain's document, asking for bytes, for SetPluggedMemory
// implementations to apply; it fails with ErrInvalidSpec when doc has no
// such device or it cannot take that size.
func ResizedMemoryDevice(doc *libvirtxml.Domain, name string, bytes uint64) (*libvirtxml.DomainMemorydev, error) {
	fail := func(msg string) error {
		return &Error{Op: OpSetPluggedMemory, Domain: name, Kind: ErrInvalidSpec, Message: msg}
	}
	if doc.Devices == nil {
		return nil, fail("the domain has no virtio-mem device (spec.domain.memory.maxGuest)")
	}
	for i := range doc.Devices.Memorydevs {
		d := doc.Devices.Memorydevs[i]
		if d.Model != "virtio-mem" || d.Target == nil || d.Target.Size == nil || d.Target.Block == nil {
			continue
		}
		size := MemoryBytes(d.Target.Size.Value, d.Target.Size.Unit)
		block := MemoryBytes(d.Target.Block.Value, d.Target.Block.Unit)
		switch {
		case bytes > size:
			return nil, fail(fmt.Sprintf("%d bytes asked for, the virtio-mem device holds %d (spec.domain.memory.maxGuest less the boot memory)", bytes, size))
		case block == 0 || bytes%block != 0:
			return nil, fail(fmt.Sprintf("%d bytes is not a multiple of the virtio-mem block of %d bytes", bytes, block))
		}
		out := d
		t := *d.Target
		t.Requested = &libvirtxml.DomainMemorydevTargetRequested{Value: uint(bytes), Unit: "b"}
		out.Target = &t
		return &out, nil
	}
	return nil, fail("the domain has no virtio-mem device (spec.domain.memory.maxGuest)")
}
