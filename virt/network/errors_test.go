package network_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/network"
	"github.com/virtkit/virtkit/virt/network/networktest"
	"github.com/virtkit/virtkit/virt/spec"
)

func TestFieldErrorAsFieldError(t *testing.T) {
	omit := field.OmitValueType{}
	for _, tc := range []struct {
		name string
		err  *network.FieldError
		want *field.Error
		text string
	}{
		{"invalid", &network.FieldError{Field: "spec.domain.devices.interfaces[0].macAddress", Reason: `"zz" is not a 48-bit MAC address`, Kind: network.ErrInvalidSpec},
			&field.Error{Type: field.ErrorTypeInvalid, Field: "spec.domain.devices.interfaces[0].macAddress", BadValue: omit, Detail: `"zz" is not a 48-bit MAC address`},
			`spec.domain.devices.interfaces[0].macAddress: Invalid value: "zz" is not a 48-bit MAC address`},
		{"unsupported", &network.FieldError{Field: "spec.domain.devices.interfaces[0].sriov", Reason: "the SR-IOV binding is not supported", Kind: network.ErrUnsupported},
			&field.Error{Type: field.ErrorTypeForbidden, Field: "spec.domain.devices.interfaces[0].sriov", BadValue: omit, Detail: spec.UnsupportedPrefix + "the SR-IOV binding is not supported"},
			"spec.domain.devices.interfaces[0].sriov: Forbidden: not supported by virtkit yet: the SR-IOV binding is not supported"},
		{"no pod interface", &network.FieldError{Field: "spec.networks[1]", Reason: `network "blue": pod interface net1 not found (pod has eth0)`, Kind: network.ErrNoPodInterface},
			&field.Error{Type: field.ErrorTypeNotFound, Field: "spec.networks[1]", BadValue: omit, Detail: `network "blue": pod interface net1 not found (pod has eth0)`},
			`spec.networks[1]: Not found: network "blue": pod interface net1 not found (pod has eth0)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.err.FieldError()
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("FieldError() (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.text, got.Error()); d != "" {
				t.Errorf("text (-want +got):\n%s", d)
			}
			if got, want := spec.IsUnsupported(got), errors.Is(tc.err, network.ErrUnsupported); got != want {
				t.Errorf("spec.IsUnsupported = %v, want %v", got, want)
			}
		})
	}
}

// The planner's errors, all reported together, each carry their field.
func TestPlanFieldErrors(t *testing.T) {
	vmi := networktest.VMIWith([]virtv1.Interface{withMAC(networktest.Masquerade("default"), "zz")}, []virtv1.Network{networktest.PodNetwork("default"), networktest.Multus("blue")})
	_, err := network.MakePlan(vmi, []network.PodInterface{podEth0, podNet1})
	var got []string
	for _, fe := range spec.FieldErrors(fmt.Errorf("wrapped: %w", err)) {
		got = append(got, fe.Field)
	}
	if d := cmp.Diff([]string{"spec.domain.devices.interfaces[0].macAddress", "spec.networks[1]"}, got); d != "" {
		t.Errorf("fields (-want +got):\n%s\n(error: %v)", d, err)
	}
}
