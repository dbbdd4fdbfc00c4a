package domaintest

import (
	"errors"
	"testing"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/virt/domain"
)

// resizable makes doc a domain that can grow to 2 vCPUs (1 online at
// boot) and by 128 MiB of virtio-mem memory, as virt/domain renders a spec
// with maxSockets and maxGuest.
func resizable(doc *libvirtxml.Domain) *libvirtxml.Domain {
	boot := domain.MemoryBytes(doc.Memory.Value, doc.Memory.Unit)
	const plug = 128 << 20
	doc.VCPU = &libvirtxml.DomainVCPU{Placement: "static", Value: 2, Current: 1}
	if doc.CPU == nil {
		doc.CPU = &libvirtxml.DomainCPU{}
	}
	doc.CPU.Topology = &libvirtxml.DomainCPUTopology{Sockets: 2, Cores: 1, Threads: 1}
	zero := uint(0)
	doc.CPU.Numa = &libvirtxml.DomainNuma{Cell: []libvirtxml.DomainCell{{ID: &zero, CPUs: "0-1", Memory: uint(boot), Unit: "b"}}}
	doc.Memory = &libvirtxml.DomainMemory{Value: uint(boot + plug), Unit: "b"}
	doc.CurrentMemory = nil
	doc.MaximumMemory = &libvirtxml.DomainMaxMemory{Value: uint(boot + plug), Unit: "b", Slots: 1}
	doc.Devices.Memorydevs = []libvirtxml.DomainMemorydev{{
		Model: "virtio-mem",
		Target: &libvirtxml.DomainMemorydevTarget{
			Size:      &libvirtxml.DomainMemorydevTargetSize{Value: plug, Unit: "b"},
			Node:      &libvirtxml.DomainMemorydevTargetNode{Value: 0},
			Block:     &libvirtxml.DomainMemorydevTargetBlock{Value: 2 << 20, Unit: "b"},
			Requested: &libvirtxml.DomainMemorydevTargetRequested{Value: 0, Unit: "b"},
		},
	}}
	return doc
}

// stepResize checks domain.Resizer on a domain of its own: vCPUs and
// virtio-mem memory grow on a running domain within the room its document
// leaves, and nothing else is accepted.
func stepResize(t *testing.T, s *suite) {
	r, ok := s.m.(domain.Resizer)
	if !ok {
		t.Fatalf("%T does not implement domain.Resizer", s.m)
	}
	ctx, cancel := s.tg.ctx()
	defer cancel()
	name := s.ownDomain(t, "-rs", "a resizable domain", resizable)
	if err := r.SetVCPUs(ctx, name, 2); !errors.Is(err, domain.ErrInvalidState) {
		t.Errorf("SetVCPUs on a shut-off domain: %v, want ErrInvalidState", err)
	}
	if err := s.m.Start(ctx, name, domain.StartOptions{}); err != nil {
		t.Fatalf("Start: %v", err)
	}
	for _, n := range []uint{0, 3} {
		if err := r.SetVCPUs(ctx, name, n); !errors.Is(err, domain.ErrInvalidSpec) {
			t.Errorf("SetVCPUs(%d) of a domain with room for 2: %v, want ErrInvalidSpec", n, err)
		}
	}
	if err := r.SetVCPUs(ctx, name, 2); err != nil {
		t.Fatalf("SetVCPUs(2): %v", err)
	}
	for _, b := range []uint64{256 << 20, 1 << 20} {
		if err := r.SetPluggedMemory(ctx, name, b); !errors.Is(err, domain.ErrInvalidSpec) {
			t.Errorf("SetPluggedMemory(%d) of a 128 MiB device of 2 MiB blocks: %v, want ErrInvalidSpec", b, err)
		}
	}
	if err := r.SetPluggedMemory(ctx, name, 64<<20); err != nil {
		t.Fatalf("SetPluggedMemory(64 MiB): %v", err)
	}
	doc, err := s.m.XML(ctx, name, domain.XMLOptions{})
	if err != nil {
		t.Fatalf("XML: %v", err)
	}
	if online := doc.VCPU.Current; doc.VCPU.Value != 2 || (online != 0 && online != 2) {
		t.Errorf("live <vcpu> %+v, want 2 online of 2", *doc.VCPU)
	}
	if len(doc.Devices.Memorydevs) != 1 || doc.Devices.Memorydevs[0].Target.Requested == nil {
		t.Fatalf("live memory devices %+v, want the virtio-mem device", doc.Devices.Memorydevs)
	}
	if req := doc.Devices.Memorydevs[0].Target.Requested; domain.MemoryBytes(req.Value, req.Unit) != 64<<20 {
		t.Errorf("virtio-mem requested %d %s, want 64 MiB", req.Value, req.Unit)
	}
	if err := s.m.Destroy(ctx, name); err != nil {
		t.Fatalf("Destroy: %v", err)
	}
	if err := r.SetPluggedMemory(ctx, name, 0); !errors.Is(err, domain.ErrInvalidState) {
		t.Errorf("SetPluggedMemory on a shut-off domain: %v, want ErrInvalidState", err)
	}
	if err := s.m.Undefine(ctx, name); err != nil {
		t.Errorf("Undefine: %v", err)
	}
}

// ownDomain defines a domain of a step's own, named after the suite's with
// suffix, from the Target's document as change makes it (what names it in
// a failure), and removes it when the step ends.
func (s *suite) ownDomain(t *testing.T, suffix, what string, change func(*libvirtxml.Domain) *libvirtxml.Domain) string {
	t.Helper()
	name := s.name + suffix
	t.Cleanup(func() {
		ctx, cancel := s.tg.ctx()
		defer cancel()
		_ = s.m.Destroy(ctx, name)
		_ = s.m.Undefine(ctx, name)
	})
	ctx, cancel := s.tg.ctx()
	defer cancel()
	if err := s.m.Define(ctx, change(s.tg.Domain(name))); err != nil {
		t.Fatalf("Define %s: %v", what, err)
	}
	return name
}
