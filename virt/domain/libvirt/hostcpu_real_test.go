package libvirt_test

import (
	"context"
	"testing"
	"time"

	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/virt/domain/libvirt"
)

// A private libvirtd describes what a software-emulated guest's CPU can be
// here: named models, and the host-model CPU with its features expanded.
func TestHostCPURealLibvirtd(t *testing.T) {
	d := testenv.Libvirtd(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m, err := libvirt.New(ctx, d.URI())
	if err != nil {
		t.Fatalf("New(%s): %v", d.URI(), err)
	}
	defer m.Close()
	caps, baseline, err := m.HostCPU(ctx, "x86_64", "q35", "qemu")
	if err != nil {
		t.Fatal(err)
	}
	if caps.Domain != "qemu" || caps.CPU == nil {
		t.Fatalf("domain capabilities: domain %q, cpu %+v", caps.Domain, caps.CPU)
	}
	usable := 0
	for _, mode := range caps.CPU.Modes {
		for _, model := range mode.Models {
			if mode.Name == "custom" && model.Usable == "yes" {
				usable++
			}
		}
	}
	if usable == 0 {
		t.Errorf("no usable named CPU model under emulation: %+v", caps.CPU.Modes)
	}
	if baseline == nil || baseline.Model == nil || len(baseline.Features) == 0 {
		t.Fatalf("host-model baseline = %+v; want a model with its features", baseline)
	}
	t.Logf("%d usable models; host model %s with %d features", usable, baseline.Model.Value, len(baseline.Features))
}
