package main

import (
	"context"
	"fmt"
	"slices"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	instancetypev1beta1 "kubevirt.io/api/instancetype/v1beta1"
)

// preferenceFlags are the flags of `create preference`, KubeVirt's.
type preferenceFlags struct {
	name, cpuTopology, machineType, storageClass string
	namespaced                                   bool
}

// cpuTopologies are the preferred CPU topologies KubeVirt accepts, the
// deprecated spellings included.
func cpuTopologies() []instancetypev1beta1.PreferredCPUTopology {
	return []instancetypev1beta1.PreferredCPUTopology{
		instancetypev1beta1.Sockets, instancetypev1beta1.Cores, instancetypev1beta1.Threads, instancetypev1beta1.Spread, instancetypev1beta1.Any,
		instancetypev1beta1.DeprecatedPreferSockets, instancetypev1beta1.DeprecatedPreferCores, instancetypev1beta1.DeprecatedPreferThreads,
		instancetypev1beta1.DeprecatedPreferSpread, instancetypev1beta1.DeprecatedPreferAny,
	}
}

func createPreferenceCommand() command {
	return command{name: "create preference", use: "create preference",
		short: "Print a VirtualMachineClusterPreference (or, namespaced, VirtualMachinePreference) manifest (YAML).",
		example: "  # A cluster preference named clusterpreference-XXXXX:\n" +
			"  virtctl create preference\n" +
			"  # A namespaced one preferring vCPUs as sockets and the q35 machine:\n" +
			"  virtctl create preference --namespaced --name linux --cpu-topology sockets --machine-type q35",
		setup: func(fs *pflag.FlagSet) action {
			f := &preferenceFlags{}
			fs.StringVar(&f.name, "name", "", "Name of the preference; default clusterpreference-XXXXX, or preference-XXXXX with --namespaced.")
			fs.StringVar(&f.cpuTopology, "cpu-topology", "", "Preferred guest CPU topology: sockets, cores, threads, spread or any.")
			fs.StringVar(&f.machineType, "machine-type", "", "Preferred machine type.")
			fs.StringVar(&f.storageClass, "volume-storage-class", "", "Preferred storage class of the VM's dataVolumeTemplates.")
			fs.BoolVar(&f.namespaced, "namespaced", false, "Make a namespaced VirtualMachinePreference; default a VirtualMachineClusterPreference. -n implies it.")
			return func(_ context.Context, s *session, _ []string) error {
				ns, namespaced := s.namespaceFlag(f.namespaced)
				if f.name == "" {
					f.name = map[bool]string{true: "preference-", false: "clusterpreference-"}[namespaced] + s.randomSuffix()
				}
				spec, err := f.spec(fs)
				if err != nil {
					return &usageError{cmd: "create preference", err: err}
				}
				meta := metav1.ObjectMeta{Name: f.name}
				if namespaced {
					meta.Namespace = ns
					return s.printYAML(&instancetypev1beta1.VirtualMachinePreference{TypeMeta: metav1.TypeMeta{
						Kind: "VirtualMachinePreference", APIVersion: instancetypev1beta1.SchemeGroupVersion.String()}, ObjectMeta: meta, Spec: spec})
				}
				return s.printYAML(&instancetypev1beta1.VirtualMachineClusterPreference{TypeMeta: metav1.TypeMeta{
					Kind: "VirtualMachineClusterPreference", APIVersion: instancetypev1beta1.SchemeGroupVersion.String()}, ObjectMeta: meta, Spec: spec})
			}
		}}
}

func (f *preferenceFlags) spec(fs *pflag.FlagSet) (instancetypev1beta1.VirtualMachinePreferenceSpec, error) {
	var spec instancetypev1beta1.VirtualMachinePreferenceSpec
	if fs.Changed("cpu-topology") {
		t := instancetypev1beta1.PreferredCPUTopology(f.cpuTopology)
		if !slices.Contains(cpuTopologies(), t) {
			return spec, fmt.Errorf("--cpu-topology %q: must be sockets, cores, threads, spread or any", f.cpuTopology)
		}
		spec.CPU = &instancetypev1beta1.CPUPreferences{PreferredCPUTopology: &t}
	}
	if fs.Changed("machine-type") {
		spec.Machine = &instancetypev1beta1.MachinePreferences{PreferredMachineType: f.machineType}
	}
	if fs.Changed("volume-storage-class") {
		spec.Volumes = &instancetypev1beta1.VolumePreferences{PreferredStorageClassName: f.storageClass}
	}
	return spec, nil
}
