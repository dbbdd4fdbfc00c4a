// Command convert shows the libvirt domain virtkit makes for a KubeVirt
// manifest, with no cluster:
//
//	go run ./examples/convert < vm.yaml
//
// It reads one VirtualMachine or VirtualMachineInstance (kubevirt.io/v1, YAML
// or JSON) from standard input, applies virt/spec's defaulting and
// validation, converts it with virt/domain against a preview of the storage
// and network plans (KubeVirt's launcher layout: virt/storage.PreviewPlan,
// virt/network.PreviewPlan), and prints the domain XML. Invalid manifests
// print their field errors on standard error and exit with status 1; a
// feature virtkit does not implement yet is reported as such.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/util/validation/field"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/virtkit/virtkit/virt/domain"
	"github.com/virtkit/virtkit/virt/network"
	"github.com/virtkit/virtkit/virt/spec"
	"github.com/virtkit/virtkit/virt/storage"
)

func main() {
	emulation := flag.Bool("emulation", false, "software emulation (domain type qemu) instead of KVM")
	flag.Parse()
	xml, err := convert(os.Stdin, *emulation)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(xml)
}

// fieldErrors is a validation failure: one line per field.
type fieldErrors field.ErrorList

func (e fieldErrors) Error() string {
	s := "invalid manifest:"
	for _, fe := range e {
		prefix := "  "
		if spec.IsUnsupported(fe) {
			prefix = "  not implemented yet: "
		}
		s += "\n" + prefix + fe.Error()
	}
	return s
}

func convert(r io.Reader, emulation bool) (string, error) {
	raw, err := io.ReadAll(r)
	if err != nil {
		return "", err
	}
	var meta struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(raw, &meta); err != nil {
		return "", fmt.Errorf("not YAML or JSON: %w", err)
	}
	if meta.APIVersion != virtv1.SchemeGroupVersion.String() {
		return "", fmt.Errorf("apiVersion %q: want %s", meta.APIVersion, virtv1.SchemeGroupVersion)
	}
	var vmi *virtv1.VirtualMachineInstance
	switch meta.Kind {
	case "VirtualMachine":
		vm := &virtv1.VirtualMachine{}
		if err := yaml.UnmarshalStrict(raw, vm); err != nil {
			return "", fmt.Errorf("VirtualMachine: %w", err)
		}
		if vm.Namespace == "" {
			vm.Namespace = "default"
		}
		spec.DefaultVM(vm)
		if errs := spec.ValidateVM(vm); len(errs) > 0 {
			return "", fieldErrors(errs)
		}
		vmi = spec.NewVMIFromVM(vm)
		if vmi == nil {
			return "", errors.New("VirtualMachine: spec.template: required")
		}
	case "VirtualMachineInstance":
		vmi = &virtv1.VirtualMachineInstance{}
		if err := yaml.UnmarshalStrict(raw, vmi); err != nil {
			return "", fmt.Errorf("VirtualMachineInstance: %w", err)
		}
		if vmi.Namespace == "" {
			vmi.Namespace = "default"
		}
	default:
		return "", fmt.Errorf("kind %q: want VirtualMachine or VirtualMachineInstance", meta.Kind)
	}
	spec.DefaultVMI(vmi)
	if errs := spec.ValidateVMI(vmi); len(errs) > 0 {
		return "", fieldErrors(errs)
	}
	host := domain.Host{
		Emulation: emulation,
		Storage:   storage.PreviewPlan(vmi),
		Network:   network.PreviewPlan(vmi),
	}
	dom, err := domain.Convert(vmi, host)
	if err != nil {
		return "", err
	}
	return dom.Marshal()
}
