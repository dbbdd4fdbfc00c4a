package spec

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	virtv1 "kubevirt.io/api/core/v1"
	instancetypev1beta1 "kubevirt.io/api/instancetype/v1beta1"
)

// ExpandVM returns vm with its instancetype and preference (it, pref; nil
// for a matcher vm does not have) written into its template, as KubeVirt's
// expand-spec subresource returns it: a disk for every bare volume and the
// pod network's interface, the instancetype and preference applied
// (conflicts refused at the template's fields), the template's spec
// defaulted as a VMI's would be, and the matchers and their status
// references removed. A VM without matchers comes back unchanged. vm is not
// modified.
func ExpandVM(vm *virtv1.VirtualMachine, it *instancetypev1beta1.VirtualMachineInstancetypeSpec,
	pref *instancetypev1beta1.VirtualMachinePreferenceSpec, opts ...Option) (*virtv1.VirtualMachine, field.ErrorList) {
	if vm.Spec.Instancetype == nil && vm.Spec.Preference == nil {
		return vm.DeepCopy(), nil
	}
	tp := field.NewPath("spec", "template")
	if vm.Spec.Template == nil {
		return nil, field.ErrorList{field.Required(tp, "a VirtualMachine needs a template")}
	}
	c := newConfig(opts)
	out := vm.DeepCopy()
	s := &out.Spec.Template.Spec
	defaultVolumeDisks(s)
	defaultPodInterface(s)
	if errs := ApplyInstancetype(s, tp.Child("spec"), it, pref); len(errs) > 0 {
		return nil, errs
	}
	if errs := ApplyAnnotations(&out.Spec.Template.ObjectMeta, it, pref); len(errs) > 0 {
		return nil, errs
	}
	defaultSpec(&c, s)
	out.Spec.Instancetype, out.Spec.Preference = nil, nil
	out.Status.InstancetypeRef, out.Status.PreferenceRef = nil, nil
	return out, nil
}
