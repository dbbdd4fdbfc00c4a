package spec

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	virtv1 "kubevirt.io/api/core/v1"
	apiinstancetype "kubevirt.io/api/instancetype"
)

// DefaultVM fills in what KubeVirt's VM mutating webhook would, in place and
// idempotently: the instancetype and preference matcher kinds (the cluster
// kinds), the template's architecture and machine type, and the storage class
// of dataVolumeTemplates from the preference.
//
// Like KubeVirt it deliberately leaves the rest of the template alone: CPU,
// memory and devices are expanded from the instancetype and preference and
// then defaulted when the VMI is created (NewVMIFromVM, ApplyInstancetype,
// DefaultVMI), so defaulting them here would manufacture conflicts with the
// instancetype. A VM naming a preference gets its machine type from the
// preference when WithPreference supplies it, and otherwise keeps an empty
// one for DefaultVMI to fill after expansion.
func DefaultVM(vm *virtv1.VirtualMachine, opts ...Option) {
	if vm == nil {
		return
	}
	c := newConfig(opts)
	if m := vm.Spec.Instancetype; m != nil && m.Kind == "" && m.InferFromVolume == "" {
		m.Kind = apiinstancetype.ClusterSingularResourceName
	}
	if m := vm.Spec.Preference; m != nil && m.Kind == "" && m.InferFromVolume == "" {
		m.Kind = apiinstancetype.ClusterSingularPreferenceResourceName
	}
	t := vm.Spec.Template
	if t == nil {
		return
	}
	if t.Spec.Architecture == "" {
		t.Spec.Architecture = c.arch
	}
	if t.Spec.Domain.Machine == nil || t.Spec.Domain.Machine.Type == "" {
		machineType := ""
		switch {
		case c.preference != nil && c.preference.Machine != nil && c.preference.Machine.PreferredMachineType != "":
			machineType = c.preference.Machine.PreferredMachineType
		case vm.Spec.Preference == nil || c.instancetypeResolved:
			machineType = c.defaultMachineType(t.Spec.Architecture)
		}
		if machineType != "" {
			t.Spec.Domain.Machine = &virtv1.Machine{Type: machineType}
		}
	}
	if p := c.preference; p != nil && p.Volumes != nil && p.Volumes.PreferredStorageClassName != "" {
		sc := p.Volumes.PreferredStorageClassName
		for i := range vm.Spec.DataVolumeTemplates {
			dv := &vm.Spec.DataVolumeTemplates[i].Spec
			if dv.PVC != nil && dv.PVC.StorageClassName == nil {
				dv.PVC.StorageClassName = &sc
			}
			if dv.Storage != nil && dv.Storage.StorageClassName == nil {
				dv.Storage.StorageClassName = &sc
			}
		}
	}
}

// NewVMIFromVM returns the VirtualMachineInstance a VM's template produces,
// as KubeVirt's VM controller builds it: the template's metadata and spec,
// named and namespaced after the VM, owned by it (controller reference,
// blocking owner deletion), with a stable firmware UUID (FirmwareUUID) so the
// guest keeps its identity across restarts, and a disk for every bare volume.
// The result is not expanded (ApplyInstancetype) nor defaulted (DefaultVMI).
// It returns nil when vm or its template is nil. vm is not modified.
func NewVMIFromVM(vm *virtv1.VirtualMachine) *virtv1.VirtualMachineInstance {
	if vm == nil || vm.Spec.Template == nil {
		return nil
	}
	t := vm.Spec.Template
	vmi := &virtv1.VirtualMachineInstance{
		TypeMeta: metav1.TypeMeta{
			APIVersion: virtv1.GroupVersion.String(),
			Kind:       virtv1.VirtualMachineInstanceGroupVersionKind.Kind,
		},
		ObjectMeta: *t.ObjectMeta.DeepCopy(),
		Spec:       *t.Spec.DeepCopy(),
	}
	vmi.Name = vm.Name
	vmi.GenerateName = ""
	vmi.Namespace = vm.Namespace
	// The VMI is a new object: identity fields of the template never carry over.
	vmi.UID, vmi.ResourceVersion, vmi.Generation = "", "", 0
	vmi.CreationTimestamp, vmi.DeletionTimestamp, vmi.ManagedFields = metav1.Time{}, nil, nil
	vmi.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(vm, virtv1.VirtualMachineGroupVersionKind)}
	defaultFirmwareUUID(&vmi.Spec, vm.Namespace, vm.Name)
	defaultVolumeDisks(&vmi.Spec)
	defaultAutoattachInput(&vmi.Spec)
	return vmi
}

// defaultAutoattachInput adds the input autoattachInputDevice asks for. Like
// KubeVirt's controller, it adds only the named input; preferences may still
// choose its bus and type before DefaultVMI fills the rest.
func defaultAutoattachInput(s *virtv1.VirtualMachineInstanceSpec) {
	if a := s.Domain.Devices.AutoattachInputDevice; a != nil && *a && len(s.Domain.Devices.Inputs) == 0 {
		s.Domain.Devices.Inputs = []virtv1.Input{{Name: "default-0"}}
	}
}
