package spec

import "k8s.io/apimachinery/pkg/util/validation/field"

// FieldErrors lists the field errors err carries, in the order errors.As
// would meet them: every error in err's tree that is a *field.Error, or
// that has a method
//
//	FieldError() *field.Error
//
// returning non-nil (virt/domain's *ConvertError and *Error, virt/network's
// *FieldError, virt/storage's *VolumeError). It looks through Unwrap() error,
// Unwrap() []error (errors.Join, fmt.Errorf with several %w) and the
// Errors() []error of an aggregate (field.ErrorList.ToAggregate); it does
// not look inside an error that gave a field error. It returns nil when err
// names no field.
//
// A caller that reports an error to a user formats what it returns as the
// validating webhook does, so a refused spec and a start that failed on it
// read alike:
//
//	if errs := spec.FieldErrors(err); len(errs) > 0 {
//		msg = errs.ToAggregate().Error()
//	}
func FieldErrors(err error) field.ErrorList {
	var out field.ErrorList
	var walk func(error)
	walk = func(err error) {
		switch e := err.(type) {
		case nil:
			return
		case *field.Error:
			if e != nil {
				out = append(out, e)
			}
			return
		case interface{ FieldError() *field.Error }:
			if fe := e.FieldError(); fe != nil {
				out = append(out, fe)
				return
			}
		}
		switch e := err.(type) {
		case interface{ Unwrap() error }:
			walk(e.Unwrap())
		case interface{ Unwrap() []error }:
			for _, c := range e.Unwrap() {
				walk(c)
			}
		case interface{ Errors() []error }:
			for _, c := range e.Errors() {
				walk(c)
			}
		}
	}
	walk(err)
	return out
}
