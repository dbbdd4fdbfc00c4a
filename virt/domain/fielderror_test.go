package domain

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/virtkit/virtkit/virt/spec"
)

func TestConvertErrorFieldError(t *testing.T) {
	omit := field.OmitValueType{}
	for _, tc := range []struct {
		name string
		err  *ConvertError
		want *field.Error
		text string // what a user reads
	}{
		{"invalid", &ConvertError{Field: "spec.domain.devices.disks[0].name", Detail: `no volume named "x" in spec.volumes`, Kind: ErrInvalidField},
			&field.Error{Type: field.ErrorTypeInvalid, Field: "spec.domain.devices.disks[0].name", BadValue: omit, Detail: `no volume named "x" in spec.volumes`},
			`spec.domain.devices.disks[0].name: Invalid value: no volume named "x" in spec.volumes`},
		{"not implemented", &ConvertError{Field: "spec.domain.cpu.realtime", Detail: "realtime vCPU scheduling is not implemented", Kind: ErrNotImplemented},
			&field.Error{Type: field.ErrorTypeForbidden, Field: "spec.domain.cpu.realtime", BadValue: omit, Detail: spec.UnsupportedPrefix + "realtime vCPU scheduling is not implemented"},
			"spec.domain.cpu.realtime: Forbidden: not supported by virtkit yet: realtime vCPU scheduling is not implemented"},
		{"missing host fact", &ConvertError{Field: "spec.domain.cpu.dedicatedCpuPlacement", Detail: "2 dedicated CPUs wanted, 1 free", Kind: ErrMissingHostFact},
			&field.Error{Type: field.ErrorTypeForbidden, Field: "spec.domain.cpu.dedicatedCpuPlacement", BadValue: omit, Detail: "2 dedicated CPUs wanted, 1 free"},
			"spec.domain.cpu.dedicatedCpuPlacement: Forbidden: 2 dedicated CPUs wanted, 1 free"},
		{"missing plan", &ConvertError{Field: "spec.domain.devices.disks[1]", Detail: `no storage plan for volume "data"`, Kind: ErrMissingPlan},
			&field.Error{Type: field.ErrorTypeInternal, Field: "spec.domain.devices.disks[1]", BadValue: omit, Detail: `no storage plan for volume "data"`},
			`spec.domain.devices.disks[1]: Internal error: no storage plan for volume "data"`},
		{"no kind", &ConvertError{Field: "spec.domain", Detail: "odd"},
			&field.Error{Type: field.ErrorTypeInvalid, Field: "spec.domain", BadValue: omit, Detail: "odd"},
			"spec.domain: Invalid value: odd"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.err.FieldError()
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("FieldError() (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.text, got.Error()); d != "" {
				t.Errorf("text (-want +got):\n%s", d)
			}
			if got, want := spec.IsUnsupported(got), errors.Is(tc.err, ErrNotImplemented); got != want {
				t.Errorf("spec.IsUnsupported = %v, want %v", got, want)
			}
		})
	}
	if (*ConvertError)(nil).FieldError() != nil {
		t.Error("a nil *ConvertError gave a field error")
	}
}

func TestErrorFieldError(t *testing.T) {
	cause := errors.New("virError(Code=27): XML error: unknown machine type")
	for _, tc := range []struct {
		name string
		err  *Error
		want *field.Error
	}{
		{"refused document", &Error{Op: "define", Domain: "ns_vm", Kind: ErrInvalidSpec, Message: "unsupported configuration: machine type 'pc-q99'", Err: cause},
			&field.Error{Type: field.ErrorTypeInvalid, Field: "spec.domain", BadValue: field.OmitValueType{},
				Detail: "the hypervisor refused it (define): unsupported configuration: machine type 'pc-q99'"}},
		{"refused without a message", &Error{Op: "start", Domain: "ns_vm", Kind: ErrInvalidSpec, Err: cause},
			&field.Error{Type: field.ErrorTypeInvalid, Field: "spec.domain", BadValue: field.OmitValueType{},
				Detail: "the hypervisor refused it (start): " + cause.Error()}},
		{"connection lost: no field", &Error{Op: "start", Domain: "ns_vm", Kind: ErrConnectionLost, Err: cause}, nil},
		{"not found: no field", &Error{Op: "state", Domain: "ns_vm", Kind: ErrNotFound}, nil},
		{"no kind: no field", &Error{Op: "start", Domain: "ns_vm", Err: cause}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, tc.err.FieldError()); d != "" {
				t.Errorf("FieldError() (-want +got):\n%s", d)
			}
		})
	}
}

// What Convert returns carries its field error, for spec.FieldErrors.
func TestConvertFieldErrors(t *testing.T) {
	vmi := baseVMI()
	vmi.Spec.Domain.Devices.Disks[0].Name = "ghost"
	_, err := Convert(vmi, testHost(vmi))
	got := spec.FieldErrors(err)
	want := field.ErrorList{{Type: field.ErrorTypeInvalid, Field: "spec.domain.devices.disks[0].name", BadValue: field.OmitValueType{},
		Detail: `no volume named "ghost" in spec.volumes`}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("spec.FieldErrors(Convert) (-want +got):\n%s", d)
	}
}
