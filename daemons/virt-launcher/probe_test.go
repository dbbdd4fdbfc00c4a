package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/virt/launcher/contract"
	"github.com/virtkit/virtkit/virt/nodelabels"
)

// The probe mode writes libvirt's answers for software emulation, from
// which the handler's labels follow; a wrong domain type is refused.
func TestProbeHostCPU(t *testing.T) {
	testenv.Integration(t)
	bin := buildLauncher(t)
	out := testenv.Dir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b, err := exec.CommandContext(ctx, bin, "--"+contract.FlagProbeHostCPU, out, "--"+contract.FlagVirtType, "qemu").CombinedOutput()
	if err != nil {
		t.Fatalf("probe: %v\n%s", err, b)
	}
	var caps libvirtxml.DomainCaps
	var cpu libvirtxml.DomainCPU
	for file, into := range map[string]interface{ Unmarshal(string) error }{contract.HostCPUCapsFile: &caps, contract.HostCPUBaselineFile: &cpu} {
		doc, err := os.ReadFile(filepath.Join(out, file))
		if err != nil {
			t.Fatal(err)
		}
		if err := into.Unmarshal(string(doc)); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	if caps.Domain != "qemu" {
		t.Errorf("domain capabilities for %q, want qemu", caps.Domain)
	}
	labels := nodelabels.Labels(&caps, &cpu, nil)
	models := 0
	for k := range labels {
		if strings.HasPrefix(k, "cpu-model.node.kubevirt.io/") {
			models++
		}
	}
	if models == 0 || cpu.Model == nil || labels["host-model-cpu.node.kubevirt.io/"+cpu.Model.Value] != "true" {
		t.Errorf("labels from the probe: %v", labels)
	}

	b, err = exec.CommandContext(ctx, bin, "--"+contract.FlagProbeHostCPU, out, "--"+contract.FlagVirtType, "xen").CombinedOutput()
	if err == nil || !strings.Contains(string(b), `--virt-type "xen": want kvm, qemu or auto`) {
		t.Errorf("probe with xen: %v\n%s", err, b)
	}
}

// auto asks about KVM only where /dev/kvm exists; kvm and qemu are taken
// as they are, without looking.
func TestProbeVirtType(t *testing.T) {
	for _, tc := range []struct {
		flag    string
		present bool
		want    string
	}{
		{"kvm", false, "kvm"},
		{"qemu", true, "qemu"},
		{"auto", true, "kvm"},
		{"auto", false, "qemu"},
	} {
		looked := false
		got, err := probeVirtType(tc.flag, func() bool { looked = true; return tc.present })
		if err != nil || got != tc.want {
			t.Errorf("probeVirtType(%q, %t) = %q, %v; want %q", tc.flag, tc.present, got, err, tc.want)
		}
		if looked != (tc.flag == "auto") {
			t.Errorf("probeVirtType(%q) looked at /dev/kvm: %t", tc.flag, looked)
		}
	}
	if _, err := probeVirtType("", func() bool { return true }); err == nil {
		t.Error("an empty --virt-type was taken")
	}
}
