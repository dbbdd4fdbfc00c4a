// Command convert shows the libvirt domain virtkit makes for a KubeVirt
// manifest, with no cluster:
//
//	go run ./examples/convert < vm.yaml
//
// It reads one VirtualMachine, VirtualMachineInstance,
// VirtualMachineInstanceReplicaSet (kubevirt.io/v1) or VirtualMachinePool
// (pool.kubevirt.io), YAML or JSON, from standard input (in a stream of
// several documents, the first of those kinds; a replica set's or pool's
// first member is shown), applies virt/spec's defaulting and
// validation, converts it with virt/domain against a preview of the storage
// and network plans (KubeVirt's launcher layout: virt/storage.PreviewPlan,
// virt/network.PreviewPlan), and prints the domain XML. Invalid manifests
// print their field errors on standard error and exit with status 1; a
// feature virtkit does not implement yet is reported as such.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	virtv1 "kubevirt.io/api/core/v1"
	poolv1 "kubevirt.io/api/pool/v1beta1"
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
	all, err := io.ReadAll(r)
	if err != nil {
		return "", err
	}
	raw, meta, err := firstKubeVirtDoc(all)
	if err != nil {
		return "", err
	}
	vmOf := func(vm *virtv1.VirtualMachine) (*virtv1.VirtualMachineInstance, error) {
		if vm.Namespace == "" {
			vm.Namespace = "default"
		}
		spec.DefaultVM(vm)
		if errs := spec.ValidateVM(vm); len(errs) > 0 {
			return nil, fieldErrors(errs)
		}
		vmi := spec.NewVMIFromVM(vm)
		if vmi == nil {
			return nil, errors.New("VirtualMachine: spec.template: required")
		}
		return vmi, nil
	}
	var vmi *virtv1.VirtualMachineInstance
	switch meta.Kind {
	case "VirtualMachine":
		vm := &virtv1.VirtualMachine{}
		if err := yaml.UnmarshalStrict(raw, vm); err != nil {
			return "", fmt.Errorf("VirtualMachine: %w", err)
		}
		if vmi, err = vmOf(vm); err != nil {
			return "", err
		}
	case "VirtualMachineInstance":
		vmi = &virtv1.VirtualMachineInstance{}
		if err := yaml.UnmarshalStrict(raw, vmi); err != nil {
			return "", fmt.Errorf("VirtualMachineInstance: %w", err)
		}
		if vmi.Namespace == "" {
			vmi.Namespace = "default"
		}
	case "VirtualMachineInstanceReplicaSet":
		rs := &virtv1.VirtualMachineInstanceReplicaSet{}
		if err := yaml.UnmarshalStrict(raw, rs); err != nil {
			return "", fmt.Errorf("VirtualMachineInstanceReplicaSet: %w", err)
		}
		if rs.Namespace == "" {
			rs.Namespace = "default"
		}
		if errs := spec.ValidateReplicaSet(rs); len(errs) > 0 {
			return "", fieldErrors(errs)
		}
		vmi = spec.NewVMIFromReplicaSet(rs)
		// The apiserver would add five random characters.
		vmi.Name = vmi.GenerateName + "00000"
	case poolv1.VirtualMachinePoolKind:
		pool := &poolv1.VirtualMachinePool{}
		if err := yaml.UnmarshalStrict(raw, pool); err != nil {
			return "", fmt.Errorf("VirtualMachinePool: %w", err)
		}
		if pool.Namespace == "" {
			pool.Namespace = "default"
		}
		if errs := spec.ValidatePool(pool); len(errs) > 0 {
			return "", fieldErrors(errs)
		}
		if vmi, err = vmOf(spec.NewVMFromPool(pool, 0, pool.Name+"-1")); err != nil {
			return "", err
		}
	default:
		return "", fmt.Errorf("kind %q: want VirtualMachine, VirtualMachineInstance, VirtualMachineInstanceReplicaSet or VirtualMachinePool", meta.Kind)
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

// typeMeta is what tells a document's kind.
type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// firstKubeVirtDoc returns the first document of all (a YAML stream, or one
// JSON object) in kubevirt.io/v1 or pool.kubevirt.io; other documents (the
// Secrets a pool's cloud-init reads) are skipped. Without one, the error
// names the first document's apiVersion.
func firstKubeVirtDoc(all []byte) ([]byte, typeMeta, error) {
	var first *typeMeta
	for _, doc := range bytes.Split(all, []byte("\n---")) {
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var meta typeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return nil, meta, fmt.Errorf("not YAML or JSON: %w", err)
		}
		if meta.APIVersion == virtv1.SchemeGroupVersion.String() || strings.HasPrefix(meta.APIVersion, poolv1.SchemeGroupVersion.Group+"/") {
			return doc, meta, nil
		}
		if first == nil {
			first = &meta
		}
	}
	if first == nil {
		return nil, typeMeta{}, errors.New("no document")
	}
	return nil, *first, fmt.Errorf("apiVersion %q: want %s", first.APIVersion, virtv1.SchemeGroupVersion)
}
