package spec

import (
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"

	virtv1 "kubevirt.io/api/core/v1"
)

// ValidateReplicaSet checks a VirtualMachineInstanceReplicaSet the way
// KubeVirt's admission does, and a little more: a template is required and
// validated as a VM's template is (paths under spec.template.spec), the
// selector must parse and match the template's labels, and replicas may not
// be negative. Unlike KubeVirt it refuses an empty selector, as apps/v1
// ReplicaSets do: it would claim every VirtualMachineInstance of the
// namespace.
func ValidateReplicaSet(rs *virtv1.VirtualMachineInstanceReplicaSet, opts ...Option) field.ErrorList {
	if rs == nil {
		return field.ErrorList{field.Required(field.NewPath("spec"), "a VirtualMachineInstanceReplicaSet is required")}
	}
	c := newConfig(opts)
	sp := field.NewPath("spec")
	errs := validateObjectMeta(field.NewPath("metadata"), &rs.ObjectMeta)
	if r := rs.Spec.Replicas; r != nil && *r < 0 {
		errs = append(errs, field.Invalid(sp.Child("replicas"), *r, "must be greater than or equal to 0"))
	}
	t := rs.Spec.Template
	if t == nil {
		return append(errs, field.Required(sp.Child("template"), "a VirtualMachineInstanceReplicaSet needs a template"))
	}
	_, serrs := TemplateSelector(sp.Child("selector"), rs.Spec.Selector, t.ObjectMeta.Labels)
	errs = append(errs, serrs...)
	tp := sp.Child("template")
	errs = append(errs, validateTemplateMeta(tp.Child("metadata"), t)...)
	return append(errs, validateSpec(&c, tp.Child("spec"), &t.Spec, specMode{template: true})...)
}

// TemplateSelector parses the selector of a controller of replicas (a
// replica set, a pool) at p and checks it can work: present, not empty
// (it would match every object of the namespace), and matching the labels
// of the objects the controller makes.
func TemplateSelector(p *field.Path, sel *metav1.LabelSelector, templateLabels map[string]string) (labels.Selector, field.ErrorList) {
	if sel == nil || (len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0) {
		return nil, field.ErrorList{field.Required(p, "a selector is required; an empty one would match every object of the namespace")}
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return nil, field.ErrorList{field.Invalid(p, sel, err.Error())}
	}
	if !s.Matches(labels.Set(templateLabels)) {
		return nil, field.ErrorList{field.Invalid(p, s.String(), "selector does not match the labels of the template's metadata")}
	}
	return s, nil
}

// ReplicaSetBaseName is the prefix of the names of the VMIs rs makes, as
// KubeVirt has it: the template's name, else its generateName, else the
// replica set's name, followed directly by the apiserver's random suffix.
func ReplicaSetBaseName(rs *virtv1.VirtualMachineInstanceReplicaSet) string {
	if t := rs.Spec.Template; t != nil {
		if t.ObjectMeta.Name != "" {
			return t.ObjectMeta.Name
		}
		if t.ObjectMeta.GenerateName != "" {
			return t.ObjectMeta.GenerateName
		}
	}
	return rs.Name
}

// NewVMIFromReplicaSet returns a VirtualMachineInstance of rs's template,
// as KubeVirt's replica set controller builds one: the template's labels,
// annotations and spec, a generateName of ReplicaSetBaseName, in rs's
// namespace, controlled by rs (blocking owner deletion), and a disk for
// every bare volume. Its firmware UUID is left for DefaultVMI to derive
// from the name the apiserver gives it. It returns nil when rs or its
// template is nil; rs is not modified.
func NewVMIFromReplicaSet(rs *virtv1.VirtualMachineInstanceReplicaSet) *virtv1.VirtualMachineInstance {
	if rs == nil || rs.Spec.Template == nil {
		return nil
	}
	t := rs.Spec.Template
	vmi := &virtv1.VirtualMachineInstance{
		TypeMeta: metav1.TypeMeta{
			APIVersion: virtv1.GroupVersion.String(),
			Kind:       virtv1.VirtualMachineInstanceGroupVersionKind.Kind,
		},
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    ReplicaSetBaseName(rs),
			Namespace:       rs.Namespace,
			Labels:          maps.Clone(t.ObjectMeta.Labels),
			Annotations:     maps.Clone(t.ObjectMeta.Annotations),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rs, virtv1.VirtualMachineInstanceReplicaSetGroupVersionKind)},
		},
		Spec: *t.Spec.DeepCopy(),
	}
	defaultVolumeDisks(&vmi.Spec)
	defaultAutoattachInput(&vmi.Spec)
	return vmi
}
