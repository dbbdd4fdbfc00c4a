package spec_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/virtkit/virtkit/virt/spec"
)

// named is an error type of a package that knows its field, or does not (fe nil),
// wrapping a cause.
type named struct {
	fe    *field.Error
	cause error
}

func (e *named) Error() string            { return "named" }
func (e *named) Unwrap() error            { return e.cause }
func (e *named) FieldError() *field.Error { return e.fe }
func invalid(path, detail string) *field.Error {
	return field.Invalid(field.NewPath(path), field.OmitValueType{}, detail)
}

func TestFieldErrors(t *testing.T) {
	a, b, c := invalid("spec.a", "bad a"), field.Required(field.NewPath("spec", "b"), "b is required"), invalid("spec.c", "bad c")
	for _, tc := range []struct {
		name string
		err  error
		want field.ErrorList
	}{
		{"nil", nil, nil},
		{"no field", errors.New("connection refused"), nil},
		{"a field error", a, field.ErrorList{a}},
		{"wrapped", fmt.Errorf("step convert: %w", a), field.ErrorList{a}},
		{"joined, in order", errors.Join(fmt.Errorf("x: %w", b), errors.New("undo failed"), a), field.ErrorList{b, a}},
		{"several %w", fmt.Errorf("%w and %w", a, b), field.ErrorList{a, b}},
		{"an aggregate", fmt.Errorf("webhook: %w", field.ErrorList{a, b}.ToAggregate()), field.ErrorList{a, b}},
		{"a typed error", fmt.Errorf("virt: %w", &named{fe: a}), field.ErrorList{a}},
		{"a typed error is not looked into", &named{fe: a, cause: c}, field.ErrorList{a}},
		{"a typed error without a field is", &named{cause: fmt.Errorf("x: %w", c)}, field.ErrorList{c}},
		{"a typed nil", fmt.Errorf("x: %w", (*field.Error)(nil)), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, spec.FieldErrors(tc.err)); d != "" {
				t.Errorf("FieldErrors(%v) (-want +got):\n%s", tc.err, d)
			}
		})
	}
}

// A start that failed on two fields reads as the webhook's refusal of them.
func ExampleFieldErrors() {
	err := fmt.Errorf("virt: VMI default/vm1: step storage: %w", errors.Join(
		field.Invalid(field.NewPath("spec", "domain", "devices", "disks").Index(1).Child("name"), field.OmitValueType{}, `no volume named "ghost"`),
		field.Forbidden(field.NewPath("spec", "volumes").Index(0), spec.UnsupportedPrefix+"sysprep volumes"),
	))
	fmt.Println(spec.FieldErrors(err).ToAggregate())
	// Output:
	// [spec.domain.devices.disks[1].name: Invalid value: no volume named "ghost", spec.volumes[0]: Forbidden: not supported by virtkit yet: sysprep volumes]
}
