package handler_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/controllers/handler"
	"github.com/virtkit/virtkit/virt/domain"
	"github.com/virtkit/virtkit/virt/storage/hotplug"
)

func TestStatusWarnings(t *testing.T) {
	syncFalse := func(msg string) virtv1.VirtualMachineInstanceCondition {
		return virtv1.VirtualMachineInstanceCondition{Type: virtv1.VirtualMachineInstanceSynchronized, Status: corev1.ConditionFalse,
			Reason: handler.ReasonSynchronizationFailed, Message: msg}
	}
	withStatus := func(st virtv1.VirtualMachineInstanceStatus) *virtv1.VirtualMachineInstance {
		v := scheduledVMI("vm1")
		v.Spec.Volumes = append(v.Spec.Volumes, virtv1.Volume{Name: "hot"})
		v.Status = st
		return v
	}
	scheduled := virtv1.VirtualMachineInstanceStatus{Phase: virtv1.Scheduled}
	failedStart := virtv1.VirtualMachineInstanceStatus{Phase: virtv1.Scheduled,
		Conditions: []virtv1.VirtualMachineInstanceCondition{syncFalse(`claim "data" not found`)}}
	crashed := virtv1.VirtualMachineInstanceStatus{Phase: virtv1.Failed, Reason: handler.ReasonGuestCrashed,
		Conditions: []virtv1.VirtualMachineInstanceCondition{{Type: virtv1.VirtualMachineInstanceReady, Status: corev1.ConditionFalse, Message: "the guest panicked"}}}
	attachFailed := func(msg string) virtv1.VirtualMachineInstanceStatus {
		return virtv1.VirtualMachineInstanceStatus{Phase: virtv1.Running, VolumeStatus: []virtv1.VolumeStatus{
			{Name: "root", Target: "vda"}, {Name: "hot", Reason: hotplug.ReasonAttachFailed, Message: msg}}}
	}
	for _, tc := range []struct {
		name string
		old  virtv1.VirtualMachineInstanceStatus
		next virtv1.VirtualMachineInstanceStatus
		want []handler.Warning
	}{
		{"a start fails", scheduled, failedStart, []handler.Warning{{Reason: "SyncFailed", Message: `claim "data" not found`}}},
		{"it fails again the same way", failedStart, failedStart, nil},
		{"it fails otherwise", failedStart, virtv1.VirtualMachineInstanceStatus{Phase: virtv1.Scheduled,
			Conditions: []virtv1.VirtualMachineInstanceCondition{syncFalse("qemu refused")}}, []handler.Warning{{Reason: "SyncFailed", Message: "qemu refused"}}},
		{"the guest crashes", virtv1.VirtualMachineInstanceStatus{Phase: virtv1.Running}, crashed,
			[]handler.Warning{{Reason: handler.ReasonGuestCrashed, Message: "the VirtualMachineInstance failed: the guest panicked"}}},
		{"it stays failed", crashed, crashed, nil},
		{"the guest shuts down", virtv1.VirtualMachineInstanceStatus{Phase: virtv1.Running}, virtv1.VirtualMachineInstanceStatus{Phase: virtv1.Succeeded}, nil},
		{"a hotplug fails", virtv1.VirtualMachineInstanceStatus{Phase: virtv1.Running}, attachFailed("no such file"),
			[]handler.Warning{{Reason: hotplug.ReasonAttachFailed, Message: "spec.volumes[1] (hot): no such file"}}},
		{"and keeps failing", attachFailed("no such file"), attachFailed("no such file"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := handler.StatusWarnings(withStatus(tc.old), tc.next)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("StatusWarnings (-want +got):\n%s", d)
			}
		})
	}
}

// A start that fails records SyncFailed on the VMI once, however often it
// is retried with the same failure; a crash records the reason it fails with.
func TestWarningEvents(t *testing.T) {
	n := newFakeNode(t)
	rec := record.NewFakeRecorder(10)
	n.extra = append(n.extra, handler.WithEventRecorder(rec))
	n.r = n.handler()
	vmi := scheduledVMI("vm1")
	ctx := context.Background()
	assert.NilError(t, n.c.Create(ctx, vmi))
	assert.NilError(t, n.c.Status().Update(ctx, vmi))
	n.ready(vmi)
	for range 2 {
		n.dom.FailNext(domain.OpStart, errors.New("qemu refused"))
		_, err := n.r.Reconcile(ctx, reqFor("vm1"))
		assert.ErrorContains(t, err, "qemu refused")
		n.clock.Step(time.Minute) // past the wait before the next start
	}
	n.reconcile("vm1")
	assert.Equal(t, n.vmi("vm1").Status.Phase, virtv1.Running)
	assert.NilError(t, n.dom.Crash("default_vm1"))
	n.reconcile("vm1")

	close(rec.Events)
	var got []string
	for e := range rec.Events {
		got = append(got, e)
	}
	assert.Equal(t, len(got), 2, "%q", got)
	assert.Assert(t, strings.HasPrefix(got[0], "Warning SyncFailed ") && strings.Contains(got[0], "qemu refused"), got[0])
	assert.Assert(t, strings.HasPrefix(got[1], "Warning "+handler.ReasonGuestCrashed+" the VirtualMachineInstance failed: "), got[1])
}
