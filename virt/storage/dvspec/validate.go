package dvspec

import (
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"

	"github.com/virtkit/virtkit/virt/storage/importer/contract"
)

// Validate says what in dv virtkit cannot fill: its source and its claim.
// old, for an update, is the stored DataVolume: its spec may not change,
// as CDI's webhook refuses.
func Validate(dv, old *cdiv1.DataVolume) field.ErrorList {
	if old != nil && !equality.Semantic.DeepEqual(dv.Spec, old.Spec) {
		return field.ErrorList{field.Forbidden(field.NewPath("spec"), "a DataVolume's spec cannot change after creation")}
	}
	return ValidateSpec(dv.Namespace, dv.Name, &dv.Spec, field.NewPath("spec"))
}

// ValidateSpec validates a DataVolume spec found at path (a VM's
// dataVolumeTemplates[i].spec, or a DataVolume's spec) for a DataVolume of
// that namespace and name.
func ValidateSpec(namespace, name string, spec *cdiv1.DataVolumeSpec, path *field.Path) field.ErrorList {
	dv := &cdiv1.DataVolume{}
	dv.Namespace, dv.Name, dv.Spec = namespace, name, *spec
	src, err := SourceOf(dv)
	if err == nil {
		_, err = Claim(dv, src, contract.DefaultFilesystemOverhead, nil)
	}
	if err == nil {
		return nil
	}
	// The functions name fields from a DataVolume's spec.
	rel := *err
	rel.Field = path.String() + rel.Field[len("spec"):]
	return field.ErrorList{&rel}
}
