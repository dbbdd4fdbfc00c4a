package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	apiinstancetype "kubevirt.io/api/instancetype"
	"sigs.k8s.io/yaml"
)

// Defaults of KubeVirt's `virtctl create vm`.
const (
	defaultGracePeriod = 180
	defaultMemory      = "512Mi"
	cloudInitDisk      = "cloudinitdisk"
)

// vmFlags are the flags of `create vm`: a subset of KubeVirt's, with its
// names and defaults.
type vmFlags struct {
	name                  string
	runStrategy           string
	gracePeriod           int64
	instancetype          string
	preference            string
	memory                string
	containerDisks        []string
	pvcs                  []string
	imports               []string
	userData, networkData string
	changedMemory         bool
	// suffix ends generated names (the session's randomSuffix).
	suffix func() string
}

// createCommand is KubeVirt's `virtctl create`: it prints manifests, and
// talks to no cluster.
func createCommand() command {
	return command{name: "create", use: "create (vm|instancetype|preference|clone)",
		short: "Print a manifest (YAML) of a VM, an instancetype, a preference or a VM clone built from flags.",
		subs:  []command{createVMCommand(), createInstancetypeCommand(), createPreferenceCommand(), createCloneCommand()}}
}

func createVMCommand() command {
	return command{name: "create vm", use: "create vm", short: "Print a VirtualMachine manifest (YAML) built from flags.",
		example: "  # A VM booting a containerDisk, with cloud-init user data:\n" +
			"  virtctl create vm --name=tiny --memory=128Mi \\\n" +
			"    --volume-containerdisk=src:localhost:5000/virtkit/test-guest:latest \\\n" +
			"    --cloud-init-user-data=$(base64 -w0 user-data) | kubectl apply -f -\n" +
			"  # A VM sized by a cluster instancetype, booting a PVC:\n" +
			"  virtctl create vm --name=db --instancetype=u1.medium --volume-pvc=src:db-root\n" +
			"  # A VM whose root disk clones the DataSource fedora of namespace vms:\n" +
			"  virtctl create vm --name=web --volume-import=type:ds,src:vms/fedora,size:10Gi,bootorder:1",
		setup: func(fs *pflag.FlagSet) action {
			f := &vmFlags{}
			fs.StringVar(&f.name, "name", "", "Name of the VM; default vm-XXXXX.")
			fs.StringVar(&f.runStrategy, "run-strategy", string(virtv1.RunStrategyAlways), "Run strategy of the VM: Always, Manual, Halted, Once or RerunOnFailure.")
			fs.Int64Var(&f.gracePeriod, "termination-grace-period", defaultGracePeriod, "Seconds the guest is given to shut down.")
			fs.StringVar(&f.instancetype, "instancetype", "", "[KIND/]NAME of the instancetype; KIND virtualmachineclusterinstancetype (default) or virtualmachineinstancetype.")
			fs.StringVar(&f.preference, "preference", "", "[KIND/]NAME of the preference; KIND virtualmachineclusterpreference (default) or virtualmachinepreference.")
			fs.StringVar(&f.memory, "memory", "", "Guest memory (spec.template.spec.domain.memory.guest); default "+defaultMemory+" without --instancetype.")
			fs.StringArrayVar(&f.containerDisks, "volume-containerdisk", nil, "A containerDisk volume, src:IMAGE[,name:NAME][,bootorder:N]; repeatable.")
			fs.StringArrayVar(&f.pvcs, "volume-pvc", nil, "A PersistentVolumeClaim volume, src:CLAIM[,name:NAME][,bootorder:N]; repeatable.")
			fs.StringArrayVar(&f.imports, "volume-import", nil, "A volume imported into a DataVolume of the VM's dataVolumeTemplates: type:http|registry|pvc|ds|blank "+
				"with url:URL (http, registry), src:[NAMESPACE/]NAME (pvc, which needs the namespace, and ds), size:SIZE (optional for pvc and ds), "+
				"[,name:NAME][,bootorder:N][,secretref:SECRET][,certconfigmap:CONFIGMAP]; repeatable.")
			fs.StringVar(&f.userData, "cloud-init-user-data", "", "Base64-encoded cloud-init user data (a NoCloud volume named "+cloudInitDisk+").")
			fs.StringVar(&f.networkData, "cloud-init-network-data", "", "Base64-encoded cloud-init network data.")
			return func(_ context.Context, s *session, _ []string) error {
				f.changedMemory = fs.Changed("memory")
				f.suffix = s.randomSuffix
				if f.name == "" {
					f.name = "vm-" + s.randomSuffix()
				}
				vm, err := f.build()
				if err != nil {
					return &usageError{cmd: "create vm", err: err}
				}
				return s.printYAML(vm)
			}
		}}
}

// build makes the VirtualMachine as KubeVirt's `virtctl create vm` does:
// volumes in the order containerDisks, PVCs, imports, cloud-init; a disk only for a
// volume with a boot order (the rest are defaulted by the webhook).
func (f *vmFlags) build() (*virtv1.VirtualMachine, error) {
	rs := virtv1.VirtualMachineRunStrategy(f.runStrategy)
	switch rs {
	case virtv1.RunStrategyAlways, virtv1.RunStrategyManual, virtv1.RunStrategyHalted, virtv1.RunStrategyOnce, virtv1.RunStrategyRerunOnFailure:
	default:
		return nil, fmt.Errorf("--run-strategy: invalid RunStrategy %q, supported values are: Always, Manual, Halted, Once, RerunOnFailure", f.runStrategy)
	}
	grace := f.gracePeriod
	vm := &virtv1.VirtualMachine{
		TypeMeta:   metav1.TypeMeta{Kind: "VirtualMachine", APIVersion: virtv1.GroupVersion.String()},
		ObjectMeta: metav1.ObjectMeta{Name: f.name},
		Spec: virtv1.VirtualMachineSpec{RunStrategy: &rs, Template: &virtv1.VirtualMachineInstanceTemplateSpec{
			Spec: virtv1.VirtualMachineInstanceSpec{TerminationGracePeriodSeconds: &grace}}},
	}
	spec := &vm.Spec.Template.Spec
	if f.instancetype != "" {
		if f.changedMemory {
			return nil, fmt.Errorf("--memory and --instancetype exclude each other: the instancetype sets the memory")
		}
		kind, name, err := kindName("--instancetype", f.instancetype, apiinstancetype.SingularResourceName, apiinstancetype.ClusterSingularResourceName)
		if err != nil {
			return nil, err
		}
		vm.Spec.Instancetype = &virtv1.InstancetypeMatcher{Kind: kind, Name: name}
	} else {
		mem := defaultMemory
		if f.memory != "" {
			mem = f.memory
		}
		q, err := resource.ParseQuantity(mem)
		if err != nil {
			return nil, fmt.Errorf("--memory %q: %w", mem, err)
		}
		spec.Domain.Memory = &virtv1.Memory{Guest: &q}
	}
	if f.preference != "" {
		kind, name, err := kindName("--preference", f.preference, apiinstancetype.SingularPreferenceResourceName, apiinstancetype.ClusterSingularPreferenceResourceName)
		if err != nil {
			return nil, err
		}
		vm.Spec.Preference = &virtv1.PreferenceMatcher{Kind: kind, Name: name}
	}
	boot := map[uint]string{}
	for i, v := range f.containerDisks {
		p, err := volumeParams("--volume-containerdisk", v)
		if err != nil {
			return nil, err
		}
		if p.name == "" {
			p.name = fmt.Sprintf("%s-containerdisk-%d", f.name, i)
		}
		if err := addVolume(spec, boot, "--volume-containerdisk", p, virtv1.VolumeSource{ContainerDisk: &virtv1.ContainerDiskSource{Image: p.src}}); err != nil {
			return nil, err
		}
	}
	for _, v := range f.pvcs {
		p, err := volumeParams("--volume-pvc", v)
		if err != nil {
			return nil, err
		}
		if strings.Contains(p.src, "/") {
			return nil, fmt.Errorf("--volume-pvc: not allowed to specify namespace of pvc %q", p.src)
		}
		if p.name == "" {
			p.name = p.src
		}
		src := virtv1.VolumeSource{PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: p.src}}}
		if err := addVolume(spec, boot, "--volume-pvc", p, src); err != nil {
			return nil, err
		}
	}
	for _, v := range f.imports {
		if err := addImport(vm, boot, v, f.suffix); err != nil {
			return nil, err
		}
	}
	if f.userData != "" || f.networkData != "" {
		for _, d := range []struct{ flag, value string }{{"--cloud-init-user-data", f.userData}, {"--cloud-init-network-data", f.networkData}} {
			if _, err := base64.StdEncoding.DecodeString(d.value); err != nil {
				return nil, fmt.Errorf("%s is not base64 (encode the file with `base64 -w0 FILE`): %w", d.flag, err)
			}
		}
		src := virtv1.VolumeSource{CloudInitNoCloud: &virtv1.CloudInitNoCloudSource{UserDataBase64: f.userData, NetworkDataBase64: f.networkData}}
		if err := addVolume(spec, boot, "--cloud-init-user-data", volumeParam{name: cloudInitDisk}, src); err != nil {
			return nil, err
		}
	}
	return vm, nil
}

// volumeParam is one volume flag's value: src:X,name:Y,bootorder:N.
type volumeParam struct {
	src, name string
	bootOrder uint
}

func volumeParams(flag, value string) (volumeParam, error) {
	var p volumeParam
	for _, kv := range strings.Split(value, ",") {
		k, v, ok := strings.Cut(kv, ":")
		if !ok || v == "" {
			return p, fmt.Errorf("%s=%s: %q is not KEY:VALUE (keys src, name, bootorder)", flag, value, kv)
		}
		switch k {
		case "src":
			p.src = v
		case "name":
			p.name = v
		case "bootorder":
			n, err := strconv.ParseUint(v, 10, 32)
			if err != nil || n == 0 {
				return p, fmt.Errorf("%s=%s: bootorder must be a number greater than 0", flag, value)
			}
			p.bootOrder = uint(n)
		default:
			return p, fmt.Errorf("%s=%s: unknown key %q (keys src, name, bootorder)", flag, value, k)
		}
	}
	if p.src == "" {
		return p, fmt.Errorf("%s=%s: src must be specified", flag, value)
	}
	return p, nil
}

// addVolume adds a volume, and a disk when it has a boot order.
func addVolume(spec *virtv1.VirtualMachineInstanceSpec, boot map[uint]string, flag string, p volumeParam, src virtv1.VolumeSource) error {
	for _, v := range spec.Volumes {
		if v.Name == p.name {
			return fmt.Errorf("%s: there is already a Volume with name %q", flag, p.name)
		}
	}
	spec.Volumes = append(spec.Volumes, virtv1.Volume{Name: p.name, VolumeSource: src})
	if p.bootOrder == 0 {
		return nil
	}
	if other, ok := boot[p.bootOrder]; ok {
		return fmt.Errorf("%s: bootorder %d is given to %s already", flag, p.bootOrder, other)
	}
	boot[p.bootOrder] = p.name
	order := p.bootOrder
	spec.Domain.Devices.Disks = append(spec.Domain.Devices.Disks, virtv1.Disk{Name: p.name, BootOrder: &order})
	return nil
}

// kindName splits [KIND/]NAME and checks KIND against the two allowed.
func kindName(flag, value string, kinds ...string) (string, string, error) {
	kind, name, ok := strings.Cut(value, "/")
	if !ok {
		return "", value, nil
	}
	if strings.Contains(name, "/") || name == "" {
		return "", "", fmt.Errorf("%s %q: want NAME or KIND/NAME", flag, value)
	}
	for _, k := range kinds {
		if kind == k {
			return kind, name, nil
		}
	}
	return "", "", fmt.Errorf("%s: invalid kind %q, supported values are: %s", flag, kind, strings.Join(kinds, ", "))
}

// printYAML writes obj to stdout as YAML, as `virtctl create` prints its
// manifests.
func (s *session) printYAML(obj any) error {
	b, err := yaml.Marshal(obj)
	if err != nil {
		return err
	}
	_, err = s.stdout.Write(b)
	return err
}
