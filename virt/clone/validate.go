package clone

import (
	"net"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	clonev1 "kubevirt.io/api/clone/v1beta1"

	"github.com/virtkit/virtkit/virt/storage/snapshot"
)

// sourceGroups are the kinds a clone copies, with their groups.
var sourceGroups = map[string]string{VirtualMachineKind: VirtualMachineGroup, VirtualMachineSnapshotKind: SnapshotGroup}

// Validate checks a clone's spec as the webhook does at creation (after
// Default): its source a VM or a VM snapshot, its target a VM of another
// name than a VM source, its filters, MAC addresses, patches and volume
// name policy well formed.
func Validate(c *clonev1.VirtualMachineClone) field.ErrorList {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	src := c.Spec.Source
	if src == nil {
		errs = append(errs, field.Required(spec.Child("source"), "the VirtualMachine or VirtualMachineSnapshot to clone is required"))
	} else {
		p := spec.Child("source")
		group, known := sourceGroups[src.Kind]
		if !known {
			errs = append(errs, field.NotSupported(p.Child("kind"), src.Kind, []string{VirtualMachineKind, VirtualMachineSnapshotKind}))
		}
		switch g := ptr.Deref(src.APIGroup, ""); {
		case g == "":
			errs = append(errs, field.Required(p.Child("apiGroup"), "the source's API group is required"))
		case known && g != group:
			errs = append(errs, field.NotSupported(p.Child("apiGroup"), g, []string{group}))
		}
		if src.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), "the source's name is required"))
		}
	}
	if t := c.Spec.Target; t != nil {
		p := spec.Child("target")
		if t.Kind != VirtualMachineKind {
			errs = append(errs, field.NotSupported(p.Child("kind"), t.Kind, []string{VirtualMachineKind}))
		}
		if g := ptr.Deref(t.APIGroup, VirtualMachineGroup); g != VirtualMachineGroup {
			errs = append(errs, field.NotSupported(p.Child("apiGroup"), g, []string{VirtualMachineGroup}))
		}
		if t.Name != "" {
			for _, msg := range validation.IsDNS1123Subdomain(t.Name) {
				errs = append(errs, field.Invalid(p.Child("name"), t.Name, msg))
			}
			if len(t.Name) > maxVMName {
				errs = append(errs, field.TooLong(p.Child("name"), t.Name, maxVMName))
			}
		}
		if src != nil && src.Kind == VirtualMachineKind && t.Name == src.Name {
			errs = append(errs, field.Invalid(p.Child("name"), t.Name, "the target cannot be the source VirtualMachine itself"))
		}
	}
	errs = append(errs, ValidateFilters(c.Spec.LabelFilters, spec.Child("labelFilters"))...)
	errs = append(errs, ValidateFilters(c.Spec.AnnotationFilters, spec.Child("annotationFilters"))...)
	errs = append(errs, ValidateFilters(c.Spec.Template.LabelFilters, spec.Child("template", "labelFilters"))...)
	errs = append(errs, ValidateFilters(c.Spec.Template.AnnotationFilters, spec.Child("template", "annotationFilters"))...)
	for iface, mac := range c.Spec.NewMacAddresses {
		if mac == "" {
			continue
		}
		if hw, err := net.ParseMAC(mac); err != nil || len(hw) != 6 {
			errs = append(errs, field.Invalid(spec.Child("newMacAddresses").Key(iface), mac, "not a MAC address (six bytes, such as 02:00:00:00:00:01)"))
		}
	}
	errs = append(errs, snapshot.ValidatePatches(c.Spec.Patches, spec.Child("patches"))...)
	if p := c.Spec.VolumeNamePolicy; p != nil && *p != clonev1.VolumeNamePolicyRandomizeNames && *p != clonev1.VolumeNamePolicyPrefixTargetName {
		errs = append(errs, field.NotSupported(spec.Child("volumeNamePolicy"), *p,
			[]string{string(clonev1.VolumeNamePolicyRandomizeNames), string(clonev1.VolumeNamePolicyPrefixTargetName)}))
	}
	return errs
}

// Default fills in the target of a clone whose spec names none, or names
// no target VM, as KubeVirt's webhook does: a VirtualMachine named
// clone-SOURCE-SUFFIX. It says whether it changed c.
func Default(c *clonev1.VirtualMachineClone, suffix string) bool {
	if c.Spec.Source == nil {
		return false
	}
	switch t := c.Spec.Target; {
	case t == nil:
		c.Spec.Target = &corev1.TypedLocalObjectReference{APIGroup: ptr.To(VirtualMachineGroup), Kind: VirtualMachineKind,
			Name: TargetName(c.Spec.Source.Name, suffix)}
	case t.Name == "":
		t.Name = TargetName(c.Spec.Source.Name, suffix)
	default:
		return false
	}
	return true
}
