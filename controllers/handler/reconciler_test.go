package handler_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/virtkit/virtkit/controllers/conditions"
	"github.com/virtkit/virtkit/controllers/handler"
	"github.com/virtkit/virtkit/virt/domain"
	"github.com/virtkit/virtkit/virt/launcher"
	"github.com/virtkit/virtkit/virt/storage"
	"github.com/virtkit/virtkit/virtapi/nodeapi"
)

func reqFor(name string) ctrl.Request {
	return ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: name}}
}

func condition(vmi *virtv1.VirtualMachineInstance, t virtv1.VirtualMachineInstanceConditionType) *virtv1.VirtualMachineInstanceCondition {
	return conditions.VMI().Find(vmi.Status.Conditions, t)
}

// A Scheduled VMI whose launcher is ready runs after one status write that
// carries the phase, the interfaces and the conditions; a reconcile with
// nothing new writes nothing.
func TestStartWritesRunningOnce(t *testing.T) {
	n := newFakeNode(t)
	vmi := scheduledVMI("vm1")
	ctx := context.Background()
	assert.NilError(t, n.c.Create(ctx, vmi))
	assert.NilError(t, n.c.Status().Update(ctx, vmi))

	// Not ready yet: the handler looks again soon and does nothing.
	res := n.reconcile("vm1")
	assert.Assert(t, res.RequeueAfter > 0)
	assert.Check(t, is.Len(n.writes.Writes("default"), 0))

	n.ready(vmi)
	n.reconcile("vm1")
	got := n.vmi("vm1")
	assert.DeepEqual(t, n.writes.Writes("default"), []string{"status-patch VirtualMachineInstance"})
	assert.Equal(t, got.Status.Phase, virtv1.Running)
	want := []virtv1.VirtualMachineInstanceNetworkInterface{{
		Name: "default", MAC: got.Status.Interfaces[0].MAC, IP: "10.244.0.7", IPs: []string{"10.244.0.7"},
		PodInterfaceName: "eth0", InfoSource: "domain", QueueCount: 1,
	}}
	if d := cmp.Diff(want, got.Status.Interfaces); d != "" {
		t.Errorf("interfaces (-want +got):\n%s", d)
	}
	assert.Check(t, got.Status.Interfaces[0].MAC != "")
	ready := condition(got, virtv1.VirtualMachineInstanceReady)
	assert.Assert(t, ready != nil && ready.Status == corev1.ConditionTrue, "%+v", got.Status.Conditions)
	lm := condition(got, virtv1.VirtualMachineInstanceIsMigratable)
	assert.Assert(t, lm != nil && lm.Status == corev1.ConditionTrue, "%+v", got.Status.Conditions)
	assert.Equal(t, got.Status.MigrationMethod, virtv1.BlockMigration)
	assert.Equal(t, got.Status.MigrationTransport, virtv1.MigrationTransportUnix)
	assert.Equal(t, got.Status.PhaseTransitionTimestamps[len(got.Status.PhaseTransitionTimestamps)-1].Phase, virtv1.Running)
	assert.DeepEqual(t, got.Status.VolumeStatus, []virtv1.VolumeStatus{{Name: "root", Target: "vda"}})
	assert.DeepEqual(t, n.net.Calls(), []string{"Discover", "Setup", "StartDHCP"})

	n.clock.Step(time.Minute)
	n.reconcile("vm1")
	assert.Check(t, is.Len(n.writes.Writes("default"), 1), "writes: %v", n.writes.Writes("default"))
}

// A failed start leaves nothing behind and says why in Synchronized=False.
func TestFailedStartLeavesNothing(t *testing.T) {
	n := newFakeNode(t)
	vmi := scheduledVMI("vm1")
	ctx := context.Background()
	assert.NilError(t, n.c.Create(ctx, vmi))
	assert.NilError(t, n.c.Status().Update(ctx, vmi))
	n.ready(vmi)
	n.dom.FailNext(domain.OpStart, errors.New("qemu refused"))
	_, err := n.r.Reconcile(ctx, reqFor("vm1"))
	assert.ErrorContains(t, err, "qemu refused")
	got := n.vmi("vm1")
	assert.Equal(t, got.Status.Phase, virtv1.Scheduled)
	sync := condition(got, virtv1.VirtualMachineInstanceSynchronized)
	assert.Assert(t, sync != nil && sync.Status == corev1.ConditionFalse && sync.Reason == handler.ReasonSynchronizationFailed, "%+v", got.Status.Conditions)
	assert.ErrorContains(t, errors.New(sync.Message), "step start")
	n.nothingLeft()

	// Another look before a second has passed does not start it again:
	// the VMI's status update that reported the failure comes back at once.
	res, err := n.r.Reconcile(ctx, reqFor("vm1"))
	assert.NilError(t, err)
	assert.Check(t, res.RequeueAfter > 0 && res.RequeueAfter <= time.Second, "requeue after %s", res.RequeueAfter)
	assert.Equal(t, n.vmi("vm1").Status.Phase, virtv1.Scheduled)
	n.nothingLeft()

	// The retry, once the wait is over, starts it, and the condition goes.
	n.clock.Step(time.Second)
	n.reconcile("vm1")
	got = n.vmi("vm1")
	assert.Equal(t, got.Status.Phase, virtv1.Running)
	assert.Assert(t, condition(got, virtv1.VirtualMachineInstanceSynchronized) == nil)
}

// The guest ends: a shutdown ends the VMI Succeeded, a crash Failed with the
// reason; either way nothing is left.
func TestGuestEnds(t *testing.T) {
	for _, tc := range []struct {
		name   string
		end    func(n *fakeNode, name string) error
		phase  virtv1.VirtualMachineInstancePhase
		reason string
	}{
		{"guest powers off", func(n *fakeNode, d string) error { return n.dom.Shutdown(context.Background(), d) }, virtv1.Succeeded, ""},
		{"qemu killed", func(n *fakeNode, d string) error { return n.dom.Crash(d) }, virtv1.Failed, handler.ReasonGuestCrashed},
		{"someone destroys it", func(n *fakeNode, d string) error { return n.dom.Destroy(context.Background(), d) }, virtv1.Failed, handler.ReasonGuestDestroyed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newFakeNode(t)
			n.running("vm1")
			assert.NilError(t, tc.end(n, "default_vm1"))
			n.reconcile("vm1")
			got := n.vmi("vm1")
			assert.Equal(t, got.Status.Phase, tc.phase)
			assert.Equal(t, got.Status.Reason, tc.reason)
			ready := condition(got, virtv1.VirtualMachineInstanceReady)
			assert.Assert(t, ready != nil && ready.Status == corev1.ConditionFalse, "%+v", got.Status.Conditions)
			if tc.reason != "" {
				assert.Equal(t, ready.Reason, tc.reason)
			}
			n.nothingLeft()
			assert.DeepEqual(t, n.writes.Writes("default"), []string{"status-patch VirtualMachineInstance", "status-patch VirtualMachineInstance"})
		})
	}
}

// A launcher that is gone ends the VMI as its recorded result says; one
// that left no result ends it Failed once the lost timeout passed.
func TestLauncherGone(t *testing.T) {
	for _, tc := range []struct {
		name   string
		result *launcher.Result
		phase  virtv1.VirtualMachineInstancePhase
		reason string
	}{
		{"clean exit", &launcher.Result{Code: 0, Reason: "guest shut down"}, virtv1.Succeeded, ""},
		{"libvirtd died", &launcher.Result{Code: launcher.ExitLibvirtdDied, Reason: "libvirtd exited under the launcher"}, virtv1.Failed, handler.ReasonLibvirtdDied},
		{"no result", nil, virtv1.Failed, handler.ReasonLauncherLost},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newFakeNode(t)
			_, l := n.running("vm1")
			lost := &domain.Error{Op: domain.OpState, Kind: domain.ErrConnectionLost}
			if tc.result != nil {
				n.exited(l, *tc.result)
			}
			n.dom.FailNext(domain.OpState, lost)
			res := n.reconcile("vm1")
			if tc.result == nil {
				assert.Equal(t, n.vmi("vm1").Status.Phase, virtv1.Running, "not failed before the timeout")
				assert.Assert(t, res.RequeueAfter > 0)
				n.clock.Step(handler.DefaultLauncherLostTimeout)
				n.dom.FailNext(domain.OpState, lost)
				n.reconcile("vm1")
			}
			got := n.vmi("vm1")
			assert.Equal(t, got.Status.Phase, tc.phase)
			assert.Equal(t, got.Status.Reason, tc.reason)
			if tc.result != nil {
				assert.Equal(t, condition(got, virtv1.VirtualMachineInstanceReady).Message, tc.result.Reason)
			}
			assert.Check(t, len(n.net.Active()) == 0, "network left set up")
			assert.Check(t, n.net.DHCPRunning("default") == 0, "DHCP left running")
		})
	}
}

// A deleted VMI's guest is shut down through ACPI and the VMI ends
// Succeeded; a guest that ignores ACPI is destroyed once the grace period
// is over and the VMI ends Failed, as KubeVirt decides.
func TestDeletion(t *testing.T) {
	t.Run("graceful", func(t *testing.T) {
		n := newFakeNode(t)
		vmi, _ := n.running("vm1")
		assert.NilError(t, n.c.Delete(context.Background(), vmi))
		res := n.reconcile("vm1")
		assert.Assert(t, res.RequeueAfter > 0, "waits for the guest")
		n.reconcile("vm1") // the stop event
		got := n.vmi("vm1")
		assert.Equal(t, got.Status.Phase, virtv1.Succeeded)
		assert.DeepEqual(t, got.Finalizers, []string{virtv1.VirtualMachineInstanceFinalizer})
		n.nothingLeft()
	})
	t.Run("ignores ACPI", func(t *testing.T) {
		n := newFakeNode(t)
		vmi, _ := n.running("vm1")
		assert.NilError(t, n.dom.IgnoreACPI("default_vm1", true))
		assert.NilError(t, n.c.Delete(context.Background(), vmi))
		res := n.reconcile("vm1")
		assert.Equal(t, res.RequeueAfter, 30*time.Second)
		n.clock.Step(10 * time.Second)
		res = n.reconcile("vm1")
		assert.Equal(t, res.RequeueAfter, 20*time.Second)
		st, _, err := n.dom.State(context.Background(), "default_vm1")
		assert.NilError(t, err)
		assert.Equal(t, st, domain.StateRunning, "destroyed before the grace period ended")
		n.clock.Step(20 * time.Second)
		n.reconcile("vm1")
		got := n.vmi("vm1")
		assert.Equal(t, got.Status.Phase, virtv1.Failed)
		assert.Equal(t, got.Status.Reason, handler.ReasonGuestDestroyed)
		n.nothingLeft()
	})
}

// A restarted handler adopts a running guest: nothing is set up again, the
// DHCP server runs again, no status is written.
func TestRestartAdopts(t *testing.T) {
	n := newFakeNode(t)
	n.running("vm1")
	before := len(n.net.Calls())
	assert.NilError(t, n.r.Close()) // the old process lets go; its DHCP server stops
	assert.Equal(t, n.net.DHCPRunning("default"), 0)

	n.r = n.handler()
	n.reconcile("vm1")
	assert.DeepEqual(t, n.net.Calls()[before:], []string{"StartDHCP"})
	assert.Equal(t, n.net.DHCPRunning("default"), 1)
	assert.Check(t, is.Len(n.writes.Writes("default"), 1), "writes: %v", n.writes.Writes("default"))
	st, _, err := n.dom.State(context.Background(), "default_vm1")
	assert.NilError(t, err)
	assert.Equal(t, st, domain.StateRunning)

	// The adopted guest is driven as before: a pause shows, a stop cleans up.
	assert.NilError(t, n.r.Pause(context.Background(), "default", "vm1"))
	n.reconcile("vm1")
	assert.Assert(t, condition(n.vmi("vm1"), virtv1.VirtualMachineInstancePaused) != nil)
	assert.NilError(t, n.dom.Destroy(context.Background(), "default_vm1"))
	n.reconcile("vm1")
	n.nothingLeft()
}

// A VMI deleted while no handler ran has its guest stopped by the next
// handler, from the state record.
func TestGoneWhileDown(t *testing.T) {
	n := newFakeNode(t)
	vmi, _ := n.running("vm1")
	assert.NilError(t, n.r.Close())
	vmi.Finalizers = nil
	assert.NilError(t, n.c.Update(context.Background(), vmi))
	assert.NilError(t, n.c.Delete(context.Background(), vmi))
	n.r = n.handler()
	n.reconcile("vm1")
	n.nothingLeft()
}

// Pause and unpause go through the Ops and show in the status as the
// Paused condition; verbs in the wrong state are conflicts, and VMIs the
// handler does not run are not found.
func TestOps(t *testing.T) {
	n := newFakeNode(t)
	n.running("vm1")
	ctx := context.Background()
	assert.Assert(t, errors.Is(n.r.Unpause(ctx, "default", "vm1"), nodeapi.ErrConflict))
	assert.NilError(t, n.r.Pause(ctx, "default", "vm1"))
	assert.Assert(t, errors.Is(n.r.Pause(ctx, "default", "vm1"), nodeapi.ErrConflict))
	assert.Assert(t, errors.Is(n.r.SoftReboot(ctx, "default", "vm1"), nodeapi.ErrConflict))
	n.reconcile("vm1")
	got := n.vmi("vm1")
	paused := condition(got, virtv1.VirtualMachineInstancePaused)
	assert.Assert(t, paused != nil && paused.Reason == domain.ConditionPausedByUser, "%+v", got.Status.Conditions)
	assert.Equal(t, condition(got, virtv1.VirtualMachineInstanceReady).Status, corev1.ConditionFalse)

	assert.NilError(t, n.r.Unpause(ctx, "default", "vm1"))
	n.reconcile("vm1")
	got = n.vmi("vm1")
	assert.Assert(t, condition(got, virtv1.VirtualMachineInstancePaused) == nil)
	assert.Equal(t, condition(got, virtv1.VirtualMachineInstanceReady).Status, corev1.ConditionTrue)
	assert.NilError(t, n.r.SoftReboot(ctx, "default", "vm1"))
	assert.NilError(t, n.r.Reset(ctx, "default", "vm1"))

	for name, err := range map[string]error{
		"reset":   n.r.Reset(ctx, "default", "other"),
		"pause":   n.r.Pause(ctx, "default", "other"),
		"unpause": n.r.Unpause(ctx, "default", "other"),
		"reboot":  n.r.SoftReboot(ctx, "default", "other"),
	} {
		assert.Assert(t, errors.Is(err, nodeapi.ErrNotFound), "%s: %v", name, err)
	}
	_, err := n.r.Console(ctx, "default", "other")
	assert.Assert(t, errors.Is(err, nodeapi.ErrNotFound))
	_, err = n.r.VNC(ctx, "default", "vm1")
	assert.Assert(t, errors.Is(err, nodeapi.ErrUnavailable), "no VNC socket: %v", err)
	c, err := n.r.Console(ctx, "default", "vm1") // no socket: the Manager's console
	assert.NilError(t, err)
	assert.NilError(t, c.Close())
}

// A hotpluggable volume added to the spec (as virt-api's addvolume does) is
// attached once its image is in the pod, and detached when it leaves.
func TestHotplug(t *testing.T) {
	n := newFakeNode(t)
	vmi, _ := n.running("vm1")
	ctx := context.Background()
	vmi.Spec.Volumes = append(vmi.Spec.Volumes, virtv1.Volume{Name: "data", VolumeSource: virtv1.VolumeSource{
		PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{Hotpluggable: true,
			PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-claim"}}}})
	vmi.Spec.Domain.Devices.Disks = append(vmi.Spec.Domain.Devices.Disks, virtv1.Disk{Name: "data",
		DiskDevice: virtv1.DiskDevice{Disk: &virtv1.DiskTarget{Bus: virtv1.DiskBusSCSI}}})
	assert.NilError(t, n.c.Update(ctx, vmi))

	res := n.reconcile("vm1")
	assert.Assert(t, res.RequeueAfter > 0, "waits for the image")
	vs := n.vmi("vm1").Status.VolumeStatus
	assert.Equal(t, len(vs), 2, "%+v", vs)
	assert.Equal(t, vs[1].Phase, virtv1.VolumePending)
	assert.Equal(t, vs[1].Reason, handler.ReasonPVCNotFound)

	// The image reaches the pod (the planner's preview puts it in the claim's folder).
	n.files.Images["/var/run/kubevirt-private/vmi-disks/data/disk.img"] = storage.ImageInfo{Format: storage.FormatRaw, VirtualSize: 1 << 30, Length: 1 << 30}
	n.reconcile("vm1")
	vs = n.vmi("vm1").Status.VolumeStatus
	want := []virtv1.VolumeStatus{{Name: "root", Target: "vda"}, {Name: "data", Target: "sda", Phase: virtv1.VolumeReady,
		Reason: "VolumeReady", Message: "Successfully attach hotplugged volume data to VM", HotplugVolume: &virtv1.HotplugVolumeStatus{}}}
	if d := cmp.Diff(want, vs); d != "" {
		t.Errorf("volume status (-want +got):\n%s", d)
	}
	doc, err := n.dom.XML(ctx, "default_vm1", domain.XMLOptions{})
	assert.NilError(t, err)
	assert.Equal(t, handler.RunningDomainOf(doc).Targets["data"], "sda")
	n.reconcile("vm1")
	assert.Equal(t, len(n.writes.Writes("default")), 3, "no write without a change: %v", n.writes.Writes("default"))

	// removevolume: the disk goes.
	vmi = n.vmi("vm1")
	vmi.Spec.Volumes = vmi.Spec.Volumes[:1]
	vmi.Spec.Domain.Devices.Disks = vmi.Spec.Domain.Devices.Disks[:1]
	assert.NilError(t, n.c.Update(ctx, vmi))
	n.reconcile("vm1")
	doc, err = n.dom.XML(ctx, "default_vm1", domain.XMLOptions{})
	assert.NilError(t, err)
	_, still := handler.RunningDomainOf(doc).Targets["data"]
	assert.Assert(t, !still, "the disk is still attached")
	assert.DeepEqual(t, n.vmi("vm1").Status.VolumeStatus, []virtv1.VolumeStatus{{Name: "root", Target: "vda"}})
}

// A freeze holds until Unfreeze, or thaws by itself once its unfreeze
// timeout passes: a snapshot that never comes back cannot leave the guest
// frozen.
func TestFreezeThawsAtItsTimeout(t *testing.T) {
	n := newFakeNode(t)
	n.running("vm1")
	ctx := context.Background()
	freeze := func() string {
		info, err := n.r.GuestOSInfo(ctx, "default", "vm1")
		assert.NilError(t, err)
		return info.FSFreezeStatus
	}
	assert.NilError(t, n.r.Freeze(ctx, "default", "vm1", 0))
	assert.Equal(t, freeze(), "frozen")
	assert.NilError(t, n.r.Unfreeze(ctx, "default", "vm1"))
	assert.Equal(t, freeze(), "")

	assert.NilError(t, n.r.Freeze(ctx, "default", "vm1", 200*time.Millisecond))
	assert.Equal(t, freeze(), "frozen")
	deadline := time.Now().Add(10 * time.Second)
	for freeze() == "frozen" && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	assert.Equal(t, freeze(), "", "still frozen past its unfreeze timeout")
}
