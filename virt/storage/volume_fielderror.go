package storage

import (
	"errors"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/virtkit/virtkit/virt/spec"
)

// FieldError is e as an apimachinery field error, worded as the validating
// webhook words its refusals. Its field is e.Field, or spec.volumes keyed by
// the volume's name when the error does not know the index. The type follows
// the sentinel: ErrNotFound is NotFound; ErrUnsupported Forbidden with
// spec.UnsupportedPrefix (spec.IsUnsupported reports it); ErrUnsafeImage
// Forbidden; ErrUnknownFormat NotSupported; ErrImageTooLarge and ErrInvalid
// Invalid; any other cause (an I/O error on the node) an Internal error. The
// detail is the file concerned, the reason and the cause.
func (e *VolumeError) FieldError() *field.Error {
	if e == nil {
		return nil
	}
	fe := &field.Error{Type: field.ErrorTypeInternal, Field: e.Field, BadValue: field.OmitValueType{}}
	if fe.Field == "" {
		fe.Field = field.NewPath("spec", "volumes").Key(e.Volume).String()
	}
	switch {
	case errors.Is(e.Err, ErrNotFound):
		fe.Type = field.ErrorTypeNotFound
	case errors.Is(e.Err, ErrUnsupported):
		fe.Type = field.ErrorTypeForbidden
	case errors.Is(e.Err, ErrUnsafeImage):
		fe.Type = field.ErrorTypeForbidden
	case errors.Is(e.Err, ErrUnknownFormat):
		fe.Type = field.ErrorTypeNotSupported
	case errors.Is(e.Err, ErrImageTooLarge), errors.Is(e.Err, ErrInvalid):
		fe.Type = field.ErrorTypeInvalid
	}

	var parts []string
	if errors.Is(e.Err, ErrUnsupported) {
		parts = append(parts, strings.TrimSuffix(spec.UnsupportedPrefix, ": "))
	}
	if e.Path != "" {
		parts = append(parts, e.Path)
	}
	if e.Detail != "" {
		parts = append(parts, e.Detail)
	}
	// A bare sentinel only repeats what the type says, unless it is all
	// there is to say.
	if e.Err != nil && (e.Detail == "" || !isSentinel(e.Err)) {
		parts = append(parts, e.Err.Error())
	}
	fe.Detail = strings.Join(parts, ": ")
	return fe
}

func isSentinel(err error) bool {
	switch err {
	case ErrNotFound, ErrImageTooLarge, ErrUnknownFormat, ErrUnsafeImage, ErrUnsupported, ErrInvalid:
		return true
	}
	return false
}
