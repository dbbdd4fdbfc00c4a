package domain

import (
	"errors"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// pathSpecDomain is where a document the hypervisor refused came from.
const pathSpecDomain = "spec.domain"

// FieldError is e as an apimachinery field error when e says something
// about the VMI's spec: a document the hypervisor refused (ErrInvalidSpec)
// is spec.domain: Invalid, with the hypervisor's reason. Every other
// failure (a lost connection, a missing domain, a wrong state) is about the
// host, not a field, and gives nil.
func (e *Error) FieldError() *field.Error {
	if e == nil || !errors.Is(e.Kind, ErrInvalidSpec) {
		return nil
	}
	detail := e.Message
	if detail == "" && e.Err != nil {
		detail = e.Err.Error()
	}
	if detail == "" {
		detail = e.Kind.Error()
	}
	return &field.Error{Type: field.ErrorTypeInvalid, Field: pathSpecDomain, BadValue: field.OmitValueType{},
		Detail: "the hypervisor refused it (" + e.Op + "): " + detail}
}
