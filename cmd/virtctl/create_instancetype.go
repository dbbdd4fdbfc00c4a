package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	instancetypev1beta1 "kubevirt.io/api/instancetype/v1beta1"
)

// instancetypeFlags are the flags of `create instancetype`, KubeVirt's.
type instancetypeFlags struct {
	name, memory, ioThreadsPolicy string
	cpu                           uint32
	namespaced                    bool
	gpus, hostDevices             []string
}

func createInstancetypeCommand() command {
	return command{name: "create instancetype", use: "create instancetype",
		short: "Print a VirtualMachineClusterInstancetype (or, namespaced, VirtualMachineInstancetype) manifest (YAML).",
		example: "  # A cluster instancetype of 2 vCPUs and 256Mi, named clusterinstancetype-XXXXX:\n" +
			"  virtctl create instancetype --cpu 2 --memory 256Mi\n" +
			"  # A namespaced one, named, created with kubectl:\n" +
			"  virtctl create instancetype --namespaced --name small --cpu 1 --memory 128Mi | kubectl create -f -",
		setup: func(fs *pflag.FlagSet) action {
			f := &instancetypeFlags{}
			fs.StringVar(&f.name, "name", "", "Name of the instancetype; default clusterinstancetype-XXXXX, or instancetype-XXXXX with --namespaced.")
			fs.Uint32Var(&f.cpu, "cpu", 0, "Number of vCPUs (required).")
			fs.StringVar(&f.memory, "memory", "", "Guest memory (required).")
			fs.StringVar(&f.ioThreadsPolicy, "iothreadspolicy", "", "IOThreads policy: auto or shared.")
			fs.BoolVar(&f.namespaced, "namespaced", false, "Make a namespaced VirtualMachineInstancetype; default a VirtualMachineClusterInstancetype. -n implies it.")
			fs.StringArrayVar(&f.gpus, "gpu", nil, "A GPU to pass through, name:NAME,devicename:DEVICE; repeatable.")
			fs.StringArrayVar(&f.hostDevices, "hostdevice", nil, "A host device to pass through, name:NAME,devicename:DEVICE; repeatable.")
			return func(_ context.Context, s *session, _ []string) error {
				ns, namespaced := s.namespaceFlag(f.namespaced)
				if f.name == "" {
					f.name = map[bool]string{true: "instancetype-", false: "clusterinstancetype-"}[namespaced] + s.randomSuffix()
				}
				spec, err := f.spec(fs)
				if err != nil {
					return &usageError{cmd: "create instancetype", err: err}
				}
				meta := metav1.ObjectMeta{Name: f.name}
				if namespaced {
					meta.Namespace = ns
					return s.printYAML(&instancetypev1beta1.VirtualMachineInstancetype{TypeMeta: metav1.TypeMeta{
						Kind: "VirtualMachineInstancetype", APIVersion: instancetypev1beta1.SchemeGroupVersion.String()}, ObjectMeta: meta, Spec: spec})
				}
				return s.printYAML(&instancetypev1beta1.VirtualMachineClusterInstancetype{TypeMeta: metav1.TypeMeta{
					Kind: "VirtualMachineClusterInstancetype", APIVersion: instancetypev1beta1.SchemeGroupVersion.String()}, ObjectMeta: meta, Spec: spec})
			}
		}}
}

// spec builds the instancetype's spec from the flags, as KubeVirt's
// command does.
func (f *instancetypeFlags) spec(fs *pflag.FlagSet) (instancetypev1beta1.VirtualMachineInstancetypeSpec, error) {
	var spec instancetypev1beta1.VirtualMachineInstancetypeSpec
	if !fs.Changed("cpu") || !fs.Changed("memory") {
		return spec, fmt.Errorf("--cpu and --memory are required")
	}
	if f.cpu == 0 {
		return spec, fmt.Errorf("--cpu: must be greater than zero")
	}
	mem, err := resource.ParseQuantity(f.memory)
	if err != nil {
		return spec, fmt.Errorf("--memory %q: %w", f.memory, err)
	}
	spec.CPU.Guest, spec.Memory.Guest = f.cpu, mem
	if fs.Changed("iothreadspolicy") {
		p := virtv1.IOThreadsPolicy(f.ioThreadsPolicy)
		if p != virtv1.IOThreadsPolicyAuto && p != virtv1.IOThreadsPolicyShared {
			return spec, fmt.Errorf("--iothreadspolicy %q: must be auto or shared", f.ioThreadsPolicy)
		}
		spec.IOThreadsPolicy = &p
	}
	for _, v := range f.gpus {
		name, device, err := deviceParams("--gpu", v)
		if err != nil {
			return spec, err
		}
		spec.GPUs = append(spec.GPUs, virtv1.GPU{Name: name, DeviceName: device})
	}
	for _, v := range f.hostDevices {
		name, device, err := deviceParams("--hostdevice", v)
		if err != nil {
			return spec, err
		}
		spec.HostDevices = append(spec.HostDevices, virtv1.HostDevice{Name: name, DeviceName: device})
	}
	return spec, nil
}

// deviceParams parses name:NAME,devicename:DEVICE.
func deviceParams(flag, value string) (name, device string, err error) {
	for _, kv := range strings.Split(value, ",") {
		k, v, ok := strings.Cut(kv, ":")
		switch {
		case !ok || v == "":
			return "", "", fmt.Errorf("%s=%s: %q is not KEY:VALUE (keys name, devicename)", flag, value, kv)
		case k == "name":
			name = v
		case k == "devicename":
			device = v
		default:
			return "", "", fmt.Errorf("%s=%s: unknown key %q (keys name, devicename)", flag, value, k)
		}
	}
	if name == "" {
		return "", "", fmt.Errorf("%s=%s: name must be specified", flag, value)
	}
	if device == "" {
		return "", "", fmt.Errorf("%s=%s: devicename must be specified", flag, value)
	}
	return name, device, nil
}

// namespaceFlag is the namespace of a namespaced object `create` prints:
// -n given makes it namespaced (and names its namespace), as in KubeVirt.
func (s *session) namespaceFlag(namespaced bool) (string, bool) {
	if ns := s.g.overrides.Context.Namespace; ns != "" {
		return ns, true
	}
	return "", namespaced
}
