package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clonev1 "kubevirt.io/api/clone/v1beta1"
)

// cloneFlags are the flags of `create clone`, KubeVirt's.
type cloneFlags struct {
	name, sourceName, targetName, sourceType, targetType string
	labelFilters, annotationFilters                      []string
	templateLabelFilters, templateAnnotationFilters      []string
	newMACs                                              []string
	newSerial                                            string
}

func createCloneCommand() command {
	return command{name: "create clone", use: "create clone",
		short: "Print a VirtualMachineClone manifest (YAML) built from flags.",
		example: "  # Clone VM db to a new VM db-copy:\n" +
			"  virtctl create clone --source-name db --target-name db-copy | kubectl create -f -\n" +
			"  # Clone VM snapshot db-monday, to a VM named clone-db-monday-XXXXX, keeping no label of example.com:\n" +
			"  virtctl create clone --source-type vmsnapshot --source-name db-monday --label-filter '*' --label-filter '!example.com/*'\n" +
			"  # Give the copy's interface default its own MAC:\n" +
			"  virtctl create clone --source-name db --new-mac-address default:02:00:00:00:00:22",
		setup: func(fs *pflag.FlagSet) action {
			f := &cloneFlags{}
			fs.StringVar(&f.name, "name", "", "Name of the clone; default clone-XXXXX.")
			fs.StringVar(&f.sourceName, "source-name", "", "Name of the VM or VM snapshot to clone (required).")
			fs.StringVar(&f.targetName, "target-name", "", "Name of the new VM; default clone-SOURCE-XXXXX, given at creation.")
			fs.StringVar(&f.sourceType, "source-type", "vm", "Type of the source: vm or vmsnapshot.")
			fs.StringVar(&f.targetType, "target-type", "vm", "Type of the target: vm.")
			fs.StringArrayVar(&f.labelFilters, "label-filter", nil, "Which of the VM's labels the copy keeps: KEY, PREFIX*, * or !FILTER; repeatable.")
			fs.StringArrayVar(&f.annotationFilters, "annotation-filter", nil, "Which of the VM's annotations the copy keeps, as --label-filter; repeatable.")
			fs.StringArrayVar(&f.templateLabelFilters, "template-label-filter", nil, "Which labels of the VM's template the copy keeps; repeatable.")
			fs.StringArrayVar(&f.templateAnnotationFilters, "template-annotation-filter", nil, "Which annotations of the VM's template the copy keeps; repeatable.")
			fs.StringArrayVar(&f.newMACs, "new-mac-address", nil, "INTERFACE:MAC, the copy's MAC for an interface; repeatable. Others get none (drawn at boot).")
			fs.StringVar(&f.newSerial, "new-smbios-serial", "", "The copy's SMBIOS serial; default none.")
			return func(_ context.Context, s *session, _ []string) error {
				if f.name == "" {
					f.name = "clone-" + s.randomSuffix()
				}
				c, err := f.clone()
				if err != nil {
					return &usageError{cmd: "create clone", err: err}
				}
				c.Namespace, _ = s.namespaceFlag(false)
				return s.printYAML(c)
			}
		},
	}
}

// clone builds the VirtualMachineClone the flags describe.
func (f *cloneFlags) clone() (*clonev1.VirtualMachineClone, error) {
	if f.sourceName == "" {
		return nil, fmt.Errorf("--source-name: required")
	}
	source := &corev1.TypedLocalObjectReference{Name: f.sourceName}
	switch f.sourceType {
	case "vm", "VM", "VirtualMachine", "virtualmachine":
		source.APIGroup, source.Kind = ptrTo("kubevirt.io"), "VirtualMachine"
	case "snapshot", "vmsnapshot", "VMSnapshot", "VirtualMachineSnapshot":
		source.APIGroup, source.Kind = ptrTo("snapshot.kubevirt.io"), "VirtualMachineSnapshot"
	default:
		return nil, fmt.Errorf("--source-type: %q is not supported (vm, vmsnapshot)", f.sourceType)
	}
	switch f.targetType {
	case "vm", "VM", "VirtualMachine", "virtualmachine":
	default:
		return nil, fmt.Errorf("--target-type: %q is not supported (vm)", f.targetType)
	}
	c := &clonev1.VirtualMachineClone{
		TypeMeta:   metav1.TypeMeta{APIVersion: clonev1.SchemeGroupVersion.String(), Kind: "VirtualMachineClone"},
		ObjectMeta: metav1.ObjectMeta{Name: f.name},
		Spec: clonev1.VirtualMachineCloneSpec{
			Source:            source,
			Target:            &corev1.TypedLocalObjectReference{APIGroup: ptrTo("kubevirt.io"), Kind: "VirtualMachine", Name: f.targetName},
			LabelFilters:      f.labelFilters,
			AnnotationFilters: f.annotationFilters,
			Template:          clonev1.VirtualMachineCloneTemplateFilters{LabelFilters: f.templateLabelFilters, AnnotationFilters: f.templateAnnotationFilters},
		},
	}
	for _, m := range f.newMACs {
		iface, mac, ok := strings.Cut(m, ":")
		if !ok || iface == "" || mac == "" {
			return nil, fmt.Errorf("--new-mac-address %q: want INTERFACE:MAC", m)
		}
		if c.Spec.NewMacAddresses == nil {
			c.Spec.NewMacAddresses = map[string]string{}
		}
		c.Spec.NewMacAddresses[iface] = mac
	}
	if f.newSerial != "" {
		c.Spec.NewSMBiosSerial = ptrTo(f.newSerial)
	}
	return c, nil
}
