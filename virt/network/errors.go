package network

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/virtkit/virtkit/virt/spec"
)

// Sentinel errors; branch on them with errors.Is.
var (
	// ErrInvalidSpec marks a VMI interface or network the planner rejects.
	ErrInvalidSpec = errors.New("invalid network spec")
	// ErrUnsupported marks a binding or feature this package does not do.
	ErrUnsupported = errors.New("not supported")
	// ErrNoPodInterface marks a network whose pod interface is missing.
	ErrNoPodInterface = errors.New("pod interface not found")
	// ErrInvalidPlan marks a plan that setup refuses before touching anything.
	ErrInvalidPlan = errors.New("invalid network plan")
	// ErrForeignObject marks a link that exists under a name setup wants but
	// that setup did not make: it is left alone.
	ErrForeignObject = errors.New("object not made by virtkit")
)

// FieldError is one rejected field of a VMI: the field's path in the
// VirtualMachineInstance (spec.domain.devices.interfaces[0].macAddress) and
// why. It unwraps to a sentinel (ErrInvalidSpec, ErrUnsupported or
// ErrNoPodInterface).
type FieldError struct {
	Field  string
	Reason string
	Kind   error
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

// Unwrap returns the sentinel the error is of.
func (e *FieldError) Unwrap() error { return e.Kind }

// FieldError is e as an apimachinery field error, worded as the validating
// webhook words its refusals: ErrInvalidSpec is Invalid, ErrUnsupported
// Forbidden with spec.UnsupportedPrefix (spec.IsUnsupported reports it),
// ErrNoPodInterface NotFound. Reason says what is wrong with the value,
// which is not repeated.
func (e *FieldError) FieldError() *field.Error {
	if e == nil {
		return nil
	}
	fe := &field.Error{Type: field.ErrorTypeInvalid, Field: e.Field, BadValue: field.OmitValueType{}, Detail: e.Reason}
	switch {
	case errors.Is(e.Kind, ErrUnsupported):
		fe.Type, fe.Detail = field.ErrorTypeForbidden, spec.UnsupportedPrefix+e.Reason
	case errors.Is(e.Kind, ErrNoPodInterface):
		fe.Type = field.ErrorTypeNotFound
	}
	return fe
}

func fieldErr(kind error, field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...), Kind: kind}
}
