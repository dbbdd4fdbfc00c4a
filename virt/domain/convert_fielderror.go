package domain

import (
	"errors"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/virtkit/virtkit/virt/spec"
)

// FieldError is e as an apimachinery field error, worded as the validating
// webhook words its refusals: a field KubeVirt has but virtkit does not
// convert is Forbidden with spec.UnsupportedPrefix (spec.IsUnsupported
// reports it), a request the host cannot meet Forbidden, a missing plan (a
// caller that did not plan first) an Internal error, and a value with no
// domain equivalent Invalid. The value itself is not repeated: Detail says
// what is wrong with it.
func (e *ConvertError) FieldError() *field.Error {
	if e == nil {
		return nil
	}
	fe := &field.Error{Type: field.ErrorTypeInvalid, Field: e.Field, BadValue: field.OmitValueType{}, Detail: e.Detail}
	switch {
	case errors.Is(e.Kind, ErrNotImplemented):
		fe.Type, fe.Detail = field.ErrorTypeForbidden, spec.UnsupportedPrefix+e.Detail
	case errors.Is(e.Kind, ErrMissingHostFact):
		fe.Type = field.ErrorTypeForbidden
	case errors.Is(e.Kind, ErrMissingPlan):
		fe.Type = field.ErrorTypeInternal
	}
	return fe
}
