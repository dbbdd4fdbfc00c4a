package handler_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/controllers/handler"
)

// A start that fails on a field of the VMI says so as the validating webhook
// would: the field's path, the kind of error and why, on Synchronized=False
// (which the SyncFailed event repeats).
func TestFailedStartNamesTheField(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*virtv1.VirtualMachineInstance)
		want string
	}{
		// Storage planning, the first step, refuses it (the fake plans as the
		// real planner does).
		{"a disk without a volume", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.Disks = append(v.Spec.Domain.Devices.Disks, virtv1.Disk{Name: "ghost"})
		}, `spec.domain.devices.disks[1].name: Invalid value: no volume of this name in spec.volumes`},
		{"two bad interfaces", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.Interfaces = []virtv1.Interface{
				{Name: "a", InterfaceBindingMethod: virtv1.InterfaceBindingMethod{Masquerade: &virtv1.InterfaceMasquerade{}}},
				{Name: "b", InterfaceBindingMethod: virtv1.InterfaceBindingMethod{Masquerade: &virtv1.InterfaceMasquerade{}}}}
			v.Spec.Networks = nil
		}, `[spec.domain.devices.interfaces[0].name: Invalid value: no network named "a" in spec.networks, ` +
			`spec.domain.devices.interfaces[1].name: Invalid value: no network named "b" in spec.networks]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newFakeNode(t)
			vmi := scheduledVMI("vm1")
			tc.edit(vmi)
			ctx := context.Background()
			assert.NilError(t, n.c.Create(ctx, vmi))
			assert.NilError(t, n.c.Status().Update(ctx, vmi))
			n.ready(vmi)
			_, err := n.r.Reconcile(ctx, reqFor("vm1"))
			assert.Assert(t, err != nil)
			got := n.vmi("vm1")
			sync := condition(got, virtv1.VirtualMachineInstanceSynchronized)
			assert.Assert(t, sync != nil && sync.Status == corev1.ConditionFalse && sync.Reason == handler.ReasonSynchronizationFailed, "%+v", got.Status.Conditions)
			if d := cmp.Diff(tc.want, sync.Message); d != "" {
				t.Errorf("message (-want +got):\n%s", d)
			}
			n.nothingLeft()
		})
	}
}
