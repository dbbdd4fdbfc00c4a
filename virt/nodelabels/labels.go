package nodelabels

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	virtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
)

// DefaultObsoleteCPUModels are KubeVirt's default obsolete CPU models
// (spec.configuration.obsoleteCPUModels overrides them): never labelled,
// and a host-model CPU among them is flagged.
func DefaultObsoleteCPUModels() map[string]bool {
	out := map[string]bool{}
	for _, m := range []string{"486", "pentium", "pentium2", "pentium3", "pentiumpro", "coreduo", "n270", "core2duo",
		"Conroe", "athlon", "phenom", "qemu64", "qemu32", "kvm64", "kvm32"} {
		out[m], out[m+"-v1"] = true, true
	}
	return out
}

// owned are the prefixes (and keys) of the labels Labels manages.
var owned = []string{
	virtv1.CPUModelLabel, virtv1.SupportedHostModelMigrationCPU, virtv1.CPUFeatureLabel,
	virtv1.HostModelCPULabel, virtv1.HostModelRequiredFeaturesLabel, virtv1.CPUModelVendorLabel,
	virtv1.NodeHostModelIsObsoleteLabel,
}

// Owned reports whether key is a label Labels manages: a labeller removes
// those it no longer computes and leaves every other label alone.
func Owned(key string) bool {
	for _, p := range owned {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// Labels returns the labels of a node whose libvirt reports caps and, for
// the host-model CPU, baseline (nil when the host-model mode is not
// supported), with obsolete as the obsolete CPU models (nil:
// DefaultObsoleteCPUModels). A name that cannot be a label key is skipped.
func Labels(caps *libvirtxml.DomainCaps, baseline *libvirtxml.DomainCPU, obsolete map[string]bool) map[string]string {
	if obsolete == nil {
		obsolete = DefaultObsoleteCPUModels()
	}
	out := map[string]string{}
	set := func(prefix, name string) {
		if name != "" && len(validation.IsQualifiedName(prefix+name)) == 0 {
			out[prefix+name] = "true"
		}
	}
	if caps == nil || caps.CPU == nil {
		return out
	}
	for _, mode := range caps.CPU.Modes {
		switch {
		case mode.Name == "custom" && mode.Supported == "yes":
			for _, m := range mode.Models {
				if m.Usable == "yes" && !obsolete[m.Name] {
					set(virtv1.CPUModelLabel, m.Name)
					set(virtv1.SupportedHostModelMigrationCPU, m.Name)
				}
			}
		case mode.Name == "host-model" && mode.Supported == "yes" && len(mode.Models) > 0:
			host := mode.Models[0].Name
			set(virtv1.HostModelCPULabel, host)
			set(virtv1.CPUModelVendorLabel, mode.Vendor)
			if obsolete[host] {
				out[virtv1.NodeHostModelIsObsoleteLabel] = "true"
			} else {
				set(virtv1.SupportedHostModelMigrationCPU, host)
			}
			for _, f := range mode.Features {
				if f.Policy == "require" {
					set(virtv1.HostModelRequiredFeaturesLabel, f.Name)
				}
			}
		}
	}
	if baseline != nil {
		for _, f := range baseline.Features {
			if f.Policy == "require" {
				set(virtv1.CPUFeatureLabel, f.Name)
			}
		}
	}
	return out
}
