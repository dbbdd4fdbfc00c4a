package instancetypes

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"
	apiinstancetype "kubevirt.io/api/instancetype"

	"github.com/virtkit/virtkit/virt/spec"
)

// errIgnorable marks an inference failure that an
// inferFromVolumeFailurePolicy of Ignore turns into no matcher: the volume
// is of a kind that names nothing, or carries no label.
var errIgnorable = errors.New("ignorable")

// Infer resolves the matchers of vm that name a volume
// (spec.instancetype.inferFromVolume, spec.preference.inferFromVolume)
// into the instancetype and preference that volume's claim names in its
// labels (instancetype.kubevirt.io/default-instancetype and -kind,
// instancetype.kubevirt.io/default-preference and -kind), as KubeVirt's VM
// admission does, changing vm. A persistentVolumeClaim volume names its
// claim; a dataVolume volume the claim its dataVolumeTemplate clones
// (source.pvc), else the claim of its own name (a DataVolume's claim is
// named after it); claims are read in the VM's namespace only. With
// inferFromVolumeFailurePolicy Ignore, a volume of
// another kind or a claim without the label drops the matcher instead (and
// an inferred instancetype drops the template's memory, as in KubeVirt);
// anything else is an error naming the field.
func Infer(ctx context.Context, r Getter, vm *virtv1.VirtualMachine) error {
	if m := vm.Spec.Instancetype; m != nil && m.InferFromVolume != "" {
		name, kind, err := inferred(ctx, r, vm, m.InferFromVolume, apiinstancetype.DefaultInstancetypeLabel, apiinstancetype.DefaultInstancetypeKindLabel)
		ignore := m.InferFromVolumeFailurePolicy != nil && *m.InferFromVolumeFailurePolicy == virtv1.IgnoreInferFromVolumeFailure
		switch {
		case err != nil && ignore && errors.Is(err, errIgnorable):
			vm.Spec.Instancetype = nil
		case err != nil:
			return fmt.Errorf("spec.instancetype.inferFromVolume: %w", err)
		default:
			if ignore && vm.Spec.Template != nil {
				vm.Spec.Template.Spec.Domain.Memory = nil
			}
			vm.Spec.Instancetype = &virtv1.InstancetypeMatcher{Name: name, Kind: kind}
		}
	}
	if m := vm.Spec.Preference; m != nil && m.InferFromVolume != "" {
		name, kind, err := inferred(ctx, r, vm, m.InferFromVolume, apiinstancetype.DefaultPreferenceLabel, apiinstancetype.DefaultPreferenceKindLabel)
		ignore := m.InferFromVolumeFailurePolicy != nil && *m.InferFromVolumeFailurePolicy == virtv1.IgnoreInferFromVolumeFailure
		switch {
		case err != nil && ignore && errors.Is(err, errIgnorable):
			vm.Spec.Preference = nil
		case err != nil:
			return fmt.Errorf("spec.preference.inferFromVolume: %w", err)
		default:
			vm.Spec.Preference = &virtv1.PreferenceMatcher{Name: name, Kind: kind}
		}
	}
	return nil
}

// inferred reads the name and kind labels of the claim behind volume.
func inferred(ctx context.Context, r Getter, vm *virtv1.VirtualMachine, volume, nameLabel, kindLabel string) (name, kind string, err error) {
	if vm.Spec.Template == nil {
		return "", "", fmt.Errorf("volume %q: the VM has no template", volume)
	}
	var claim types.NamespacedName
	for _, v := range vm.Spec.Template.Spec.Volumes {
		if v.Name != volume {
			continue
		}
		switch {
		case v.PersistentVolumeClaim != nil:
			claim = types.NamespacedName{Namespace: vm.Namespace, Name: v.PersistentVolumeClaim.ClaimName}
		case v.DataVolume != nil:
			if claim, err = dataVolumeClaim(vm, v.DataVolume.Name); err != nil {
				return "", "", err
			}
		default:
			return "", "", fmt.Errorf("volume %q: only a persistentVolumeClaim or dataVolume volume names an instancetype: %w", volume, errIgnorable)
		}
	}
	if claim.Name == "" {
		return "", "", fmt.Errorf("no volume %q in spec.template.spec.volumes", volume)
	}
	pvc := &corev1.PersistentVolumeClaim{}
	if err := r.Get(ctx, claim, pvc); err != nil {
		return "", "", fmt.Errorf("volume %q: PersistentVolumeClaim %s: %w", volume, claim, err)
	}
	name, ok := pvc.Labels[nameLabel]
	if !ok {
		return "", "", fmt.Errorf("volume %q: PersistentVolumeClaim %s has no label %s: %w", volume, claim, nameLabel, errIgnorable)
	}
	return name, pvc.Labels[kindLabel], nil
}

// dataVolumeClaim is the claim a dataVolume volume's labels are read from:
// the one its dataVolumeTemplate clones, else its own.
func dataVolumeClaim(vm *virtv1.VirtualMachine, dv string) (types.NamespacedName, error) {
	for _, t := range vm.Spec.DataVolumeTemplates {
		if t.Name != dv {
			continue
		}
		switch src := t.Spec.Source; {
		case t.Spec.SourceRef != nil:
			return types.NamespacedName{}, fmt.Errorf("dataVolumeTemplate %q: %sinferring from a DataSource", dv, spec.UnsupportedPrefix)
		case src != nil && src.PVC != nil:
			// Labels are read with virt-api's rights: only in the VM's own
			// namespace, where its author may read claims anyway.
			if src.PVC.Namespace != "" && src.PVC.Namespace != vm.Namespace {
				return types.NamespacedName{}, fmt.Errorf("dataVolumeTemplate %q: %sinferring from a claim of another namespace (%s)",
					dv, spec.UnsupportedPrefix, src.PVC.Namespace)
			}
			return types.NamespacedName{Namespace: vm.Namespace, Name: src.PVC.Name}, nil
		default:
			return types.NamespacedName{}, fmt.Errorf("dataVolumeTemplate %q: only a template cloning a claim names an instancetype: %w", dv, errIgnorable)
		}
	}
	return types.NamespacedName{Namespace: vm.Namespace, Name: dv}, nil
}
