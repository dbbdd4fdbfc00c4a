package spec

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	virtv1 "kubevirt.io/api/core/v1"
	apiinstancetype "kubevirt.io/api/instancetype"
)

// runStrategies are the values of spec.runStrategy.
func runStrategies() []string {
	return []string{
		string(virtv1.RunStrategyAlways), string(virtv1.RunStrategyHalted), string(virtv1.RunStrategyManual),
		string(virtv1.RunStrategyRerunOnFailure), string(virtv1.RunStrategyOnce), string(virtv1.RunStrategyWaitAsReceiver),
	}
}

// ValidateVM checks a VirtualMachine the way KubeVirt's VM admission does:
// the run strategy, the instancetype and preference matchers, the
// dataVolumeTemplates, and the template, with paths under
// spec.template.spec. Given WithInstancetype/WithPreference it validates the
// template as expanded by them and reports conflicts between the two.
func ValidateVM(vm *virtv1.VirtualMachine, opts ...Option) field.ErrorList {
	if vm == nil {
		return field.ErrorList{field.Required(field.NewPath("spec"), "a VirtualMachine is required")}
	}
	c := newConfig(opts)
	errs := validateObjectMeta(field.NewPath("metadata"), &vm.ObjectMeta)
	return append(errs, validateVMSpec(&c, field.NewPath("spec"), vm.Namespace, &vm.Spec)...)
}

// validateVMSpec checks a VirtualMachine's spec at sp: a VM's own ("spec")
// or a pool's template of VMs ("spec.virtualMachineTemplate.spec").
func validateVMSpec(c *config, sp *field.Path, namespace string, s *virtv1.VirtualMachineSpec) field.ErrorList {
	var errs field.ErrorList
	if s.Running != nil && s.RunStrategy != nil {
		errs = append(errs, field.Invalid(sp.Child("running"), *s.Running,
			"running and runStrategy are mutually exclusive; running is deprecated, use runStrategy"))
	}
	if rs := s.RunStrategy; rs != nil && !contains(runStrategies(), string(*rs)) {
		errs = append(errs, field.NotSupported(sp.Child("runStrategy"), *rs, runStrategies()))
	}
	if u := s.UpdateVolumesStrategy; u != nil && *u != virtv1.UpdateVolumesStrategyReplacement && *u != virtv1.UpdateVolumesStrategyMigration {
		errs = append(errs, field.NotSupported(sp.Child("updateVolumesStrategy"), *u, []string{"Replacement", "Migration"}))
	}

	t := s.Template
	if t == nil {
		return append(errs, field.Required(sp.Child("template"), "a VirtualMachine needs a template"))
	}
	if m := s.Instancetype; m != nil {
		errs = append(errs, validateMatcher(sp.Child("instancetype"), m.Name, m.Kind, m.InferFromVolume,
			m.InferFromVolumeFailurePolicy, instancetypeKinds(), &t.Spec)...)
	}
	if m := s.Preference; m != nil {
		errs = append(errs, validateMatcher(sp.Child("preference"), m.Name, m.Kind, m.InferFromVolume,
			m.InferFromVolumeFailurePolicy, preferenceKinds(), &t.Spec)...)
	}
	errs = append(errs, validateDataVolumeTemplates(sp, namespace, s)...)

	tp := sp.Child("template")
	errs = append(errs, validateTemplateMeta(tp.Child("metadata"), t)...)
	spec := &t.Spec
	if c.instancetype != nil || c.preference != nil {
		expanded := t.Spec.DeepCopy()
		if conflicts := ApplyInstancetype(expanded, tp.Child("spec"), c.instancetype, c.preference); len(conflicts) > 0 {
			return append(errs, conflicts...)
		}
		spec = expanded
	}
	mode := specMode{template: true, computeFromInstancetype: s.Instancetype != nil && c.instancetype == nil}
	return append(errs, validateSpec(c, tp.Child("spec"), spec, mode)...)
}

func validateTemplateMeta(mp *field.Path, t *virtv1.VirtualMachineInstanceTemplateSpec) field.ErrorList {
	m := t.ObjectMeta
	// The template's name is replaced by the VM's; only labels and
	// annotations reach the VMI.
	m.Name, m.GenerateName = "template", ""
	return validateObjectMeta(mp, &m)
}

// instancetypeKinds are the matcher kinds KubeVirt accepts, in lower case.
func instancetypeKinds() []string {
	return []string{apiinstancetype.ClusterSingularResourceName, apiinstancetype.ClusterPluralResourceName,
		apiinstancetype.SingularResourceName, apiinstancetype.PluralResourceName}
}

func preferenceKinds() []string {
	return []string{apiinstancetype.ClusterSingularPreferenceResourceName, apiinstancetype.ClusterPluralPreferenceResourceName,
		apiinstancetype.SingularPreferenceResourceName, apiinstancetype.PluralPreferenceResourceName}
}

// validateMatcher is KubeVirt's instancetype/preference matcher validation:
// a name or inferFromVolume (not both), a known kind, and an inferFromVolume
// that names a claim-backed volume of the template.
func validateMatcher(mp *field.Path, name, kind, infer string, policy *virtv1.InferFromVolumeFailurePolicy,
	kinds []string, s *virtv1.VirtualMachineInstanceSpec) field.ErrorList {
	var errs field.ErrorList
	if name == "" && infer == "" {
		errs = append(errs, field.Required(mp.Child("name"), "either name or inferFromVolume is required"))
	}
	if infer != "" {
		if name != "" {
			errs = append(errs, field.Forbidden(mp.Child("name"), "must not be set with inferFromVolume"))
		}
		if kind != "" {
			errs = append(errs, field.Forbidden(mp.Child("kind"), "must not be set with inferFromVolume"))
		}
		found := false
		for i := range s.Volumes {
			v := &s.Volumes[i]
			if v.Name == infer {
				found = true
				if v.PersistentVolumeClaim == nil && v.DataVolume == nil {
					errs = append(errs, field.Invalid(mp.Child("inferFromVolume"), infer,
						"can only infer from a persistentVolumeClaim or dataVolume volume"))
				}
			}
		}
		if !found {
			errs = append(errs, field.NotFound(mp.Child("inferFromVolume"), infer))
		}
	}
	if kind != "" && !contains(kinds, strings.ToLower(kind)) {
		errs = append(errs, field.NotSupported(mp.Child("kind"), kind, []string{kinds[0], kinds[2]}))
	}
	if policy != nil && *policy != virtv1.RejectInferFromVolumeFailure && *policy != virtv1.IgnoreInferFromVolumeFailure {
		errs = append(errs, field.NotSupported(mp.Child("inferFromVolumeFailurePolicy"), *policy, []string{"Reject", "Ignore"}))
	}
	if name != "" {
		for _, msg := range validation.IsDNS1123Subdomain(name) {
			errs = append(errs, field.Invalid(mp.Child("name"), name, msg))
		}
	}
	return errs
}

// validateDataVolumeTemplates checks names are valid and unique, that each
// template is used by a dataVolume volume (KubeVirt refuses orphans: they
// would be created and never attached), and that it stays in the VM's
// namespace.
func validateDataVolumeTemplates(sp *field.Path, namespace string, s *virtv1.VirtualMachineSpec) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i := range s.DataVolumeTemplates {
		dv := &s.DataVolumeTemplates[i]
		dp := sp.Child("dataVolumeTemplates").Index(i)
		if dv.Name == "" {
			errs = append(errs, field.Required(dp.Child("metadata", "name"), "data volume template name is required"))
			continue
		}
		for _, msg := range validation.IsDNS1123Subdomain(dv.Name) {
			errs = append(errs, field.Invalid(dp.Child("metadata", "name"), dv.Name, msg))
		}
		if seen[dv.Name] {
			errs = append(errs, field.Duplicate(dp.Child("metadata", "name"), dv.Name))
		}
		seen[dv.Name] = true
		if dv.Namespace != "" && namespace != "" && dv.Namespace != namespace {
			errs = append(errs, field.Invalid(dp.Child("metadata", "namespace"), dv.Namespace,
				fmt.Sprintf("must be the VM's namespace %q", namespace)))
		}
		used := false
		if s.Template != nil {
			for _, v := range s.Template.Spec.Volumes {
				if v.DataVolume != nil && v.DataVolume.Name == dv.Name {
					used = true
					break
				}
			}
		}
		if !used {
			errs = append(errs, field.Invalid(dp.Child("metadata", "name"), dv.Name,
				"must be referenced by a dataVolume volume in spec.template.spec.volumes"))
		}
	}
	return errs
}
