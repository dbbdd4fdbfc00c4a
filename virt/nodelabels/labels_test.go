package nodelabels_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gotest.tools/v3/golden"
	virtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/virt/nodelabels"
)

// read parses the two documents a libvirtd of this machine gave under
// software emulation (testdata/*-tcg.xml).
func read(t *testing.T) (*libvirtxml.DomainCaps, *libvirtxml.DomainCPU) {
	t.Helper()
	var caps libvirtxml.DomainCaps
	var cpu libvirtxml.DomainCPU
	for file, into := range map[string]interface{ Unmarshal(string) error }{
		"testdata/domcapabilities-tcg.xml": &caps, "testdata/baseline-tcg.xml": &cpu,
	} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := into.Unmarshal(string(b)); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	return &caps, &cpu
}

// The labels of this machine's emulated CPU (testdata/labels-tcg.golden;
// go test -update rewrites it).
func TestLabelsGolden(t *testing.T) {
	caps, cpu := read(t)
	labels := nodelabels.Labels(caps, cpu, nil)
	keys := make([]string, 0, len(labels))
	for k, v := range labels {
		keys = append(keys, k+"="+v)
	}
	slices.Sort(keys)
	golden.Assert(t, strings.Join(keys, "\n")+"\n", "labels-tcg.golden")
}

func TestLabels(t *testing.T) {
	caps := &libvirtxml.DomainCaps{CPU: &libvirtxml.DomainCapsCPU{Modes: []libvirtxml.DomainCapsCPUMode{
		{Name: "host-model", Supported: "yes", Vendor: "Intel", Models: []libvirtxml.DomainCapsCPUModel{{Name: "Skylake-Client-IBRS"}},
			Features: []libvirtxml.DomainCapsCPUFeature{{Policy: "require", Name: "ssbd"}, {Policy: "disable", Name: "hle"}}},
		{Name: "custom", Supported: "yes", Models: []libvirtxml.DomainCapsCPUModel{
			{Name: "Penryn", Usable: "yes"}, {Name: "Haswell", Usable: "no"}, {Name: "qemu64", Usable: "yes"},
			{Name: "bad name!", Usable: "yes"}}},
	}}}
	cpu := &libvirtxml.DomainCPU{Features: []libvirtxml.DomainCPUFeature{{Policy: "require", Name: "sse4.1"}, {Policy: "disable", Name: "avx"}}}
	want := map[string]string{
		virtv1.CPUModelLabel + "Penryn":                               "true",
		virtv1.SupportedHostModelMigrationCPU + "Penryn":              "true",
		virtv1.HostModelCPULabel + "Skylake-Client-IBRS":              "true",
		virtv1.SupportedHostModelMigrationCPU + "Skylake-Client-IBRS": "true",
		virtv1.CPUModelVendorLabel + "Intel":                          "true",
		virtv1.HostModelRequiredFeaturesLabel + "ssbd":                "true",
		virtv1.CPUFeatureLabel + "sse4.1":                             "true",
	}
	if d := cmp.Diff(want, nodelabels.Labels(caps, cpu, nil)); d != "" {
		t.Errorf("Labels (-want +got):\n%s", d)
	}

	// An obsolete host model is flagged, not offered for migration; the
	// obsolete list is the caller's.
	got := nodelabels.Labels(caps, nil, map[string]bool{"Skylake-Client-IBRS": true})
	if got[virtv1.NodeHostModelIsObsoleteLabel] != "true" || got[virtv1.SupportedHostModelMigrationCPU+"Skylake-Client-IBRS"] != "" ||
		got[virtv1.CPUModelLabel+"qemu64"] != "true" {
		t.Errorf("with Skylake-Client-IBRS obsolete: %v", got)
	}
	if got := nodelabels.Labels(&libvirtxml.DomainCaps{}, nil, nil); len(got) != 0 {
		t.Errorf("no CPU facts: %v", got)
	}
}

func TestOwned(t *testing.T) {
	for key, want := range map[string]bool{
		"cpu-model.node.kubevirt.io/Penryn":             true,
		"cpu-feature.node.kubevirt.io/sse4.1":           true,
		"node-labeller.kubevirt.io/obsolete-host-model": true,
		virtv1.NodeSchedulable:                          false,
		"kubernetes.io/hostname":                        false,
		"hyperv.node.kubevirt.io/vpindex":               false,
	} {
		if got := nodelabels.Owned(key); got != want {
			t.Errorf("Owned(%q) = %v, want %v", key, got, want)
		}
	}
}
