package handler_test

import (
	"context"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/virtkit/virtkit/controllers/handler"
)

// TestHoldsForDataVolume: the handler does not start a guest whose
// DataVolume is still being filled, says which in Synchronized=False, and
// looks again later; once the DataVolume has Succeeded the hold is lifted.
func TestHoldsForDataVolume(t *testing.T) {
	dv := &cdiv1.DataVolume{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "data"},
		Status: cdiv1.DataVolumeStatus{Phase: cdiv1.ImportInProgress}}
	n := newFakeNode(t, dv)
	ctx := context.Background()
	vmi := scheduledVMI("vm1")
	vmi.Spec.Domain.Devices.Disks = append(vmi.Spec.Domain.Devices.Disks, virtv1.Disk{Name: "data"})
	vmi.Spec.Volumes = append(vmi.Spec.Volumes, virtv1.Volume{Name: "data", VolumeSource: virtv1.VolumeSource{DataVolume: &virtv1.DataVolumeSource{Name: "data"}}})
	assert.NilError(t, n.c.Create(ctx, vmi))
	assert.NilError(t, n.c.Status().Update(ctx, vmi))
	n.ready(vmi)

	res := n.reconcile("vm1")
	got := n.vmi("vm1")
	c := condition(got, virtv1.VirtualMachineInstanceSynchronized)
	assert.Assert(t, res.RequeueAfter > 0 && got.Status.Phase == virtv1.Scheduled)
	assert.Assert(t, c != nil && c.Status == corev1.ConditionFalse && c.Reason == handler.ReasonDataVolumeNotReady &&
		strings.Contains(c.Message, "DataVolume data of volume data is ImportInProgress"), "%+v", got.Status.Conditions)
	infos, err := n.dom.List(ctx)
	assert.NilError(t, err)
	assert.Equal(t, len(infos), 0, "a domain defined for a held VMI")
	writes := len(n.writes.Writes("default"))
	n.reconcile("vm1")
	assert.Equal(t, len(n.writes.Writes("default")), writes, "the same hold written again")

	dv.Status.Phase = cdiv1.Succeeded
	assert.NilError(t, n.c.Update(ctx, dv))
	// The start may fail for the fakes' lack of a claim; not for the hold.
	_, _ = n.r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: "vm1"}})
	if c := condition(n.vmi("vm1"), virtv1.VirtualMachineInstanceSynchronized); c != nil && c.Reason == handler.ReasonDataVolumeNotReady {
		t.Errorf("still held for the DataVolume once it has Succeeded: %+v", c)
	}
}
